import { describe, expect, it } from 'vitest';
import { Multiline } from '../../../../src/agent/transforms/multiline.js';

async function join(lines: string[], cfg: ConstructorParameters<typeof Multiline>[0]): Promise<string[]> {
  const out: string[] = [];
  const m = new Multiline(cfg, async (t) => void out.push(t));
  for (const l of lines) await m.push(l);
  await m.flush();
  return out;
}

describe('multiline', () => {
  it('java preset joins a stack trace with its causes', async () => {
    const lines = [
      '2024-01-01 12:00:00 ERROR request failed',
      'java.lang.IllegalStateException: boom',
      '\tat com.example.Service.run(Service.java:42)',
      '\tat com.example.Main.main(Main.java:7)',
      'Caused by: java.io.IOException: disk',
      '\t... 2 more',
      '2024-01-01 12:00:01 INFO next',
    ];
    expect(await join(lines, { preset: 'java' })).toEqual([
      '2024-01-01 12:00:00 ERROR request failed',
      lines.slice(1, 6).join('\n'),
      '2024-01-01 12:00:01 INFO next',
    ]);
  });

  it('python preset keeps a traceback together, up to its error line', async () => {
    const lines = [
      'Traceback (most recent call last):',
      '  File "app.py", line 3, in <module>',
      '    main()',
      'ValueError: bad value',
      'INFO: done',
    ];
    expect(await join(lines, { preset: 'python' })).toEqual([lines.slice(0, 4).join('\n'), 'INFO: done']);
  });

  it('go preset joins a panic with its goroutine dump', async () => {
    const lines = [
      'panic: runtime error: index out of range [3] with length 3',
      '',
      'goroutine 1 [running]:',
      'main.main()',
      '\t/app/main.go:8 +0x1d',
      'exit status 2',
    ];
    expect(await join(lines, { preset: 'go' })).toEqual([lines.slice(0, 5).join('\n'), 'exit status 2']);
  });

  it('a start pattern begins events; a quiet input is flushed after the timeout', async () => {
    expect(await join(['[1] a', 'more', '[2] b', 'x', 'y'], { start: '^\\[\\d+\\]' })).toEqual([
      '[1] a\nmore',
      '[2] b\nx\ny',
    ]);
    const out: string[] = [];
    const m = new Multiline({ start: '^\\[', timeoutMs: 30 }, async (t) => void out.push(t));
    await m.push('[1] a');
    await m.push('  tail');
    await new Promise((r) => setTimeout(r, 80));
    expect(out).toEqual(['[1] a\n  tail']);
  });

  it('cuts an endless event at maxLines and goes on, losing nothing', async () => {
    const lines = ['start', ...Array.from({ length: 7 }, (_, i) => `  ${i}`)];
    const out = await join(lines, { preset: 'java', continuation: '^\\s', maxLines: 3 });
    expect(out).toEqual(['start\n  0\n  1', '  2\n  3\n  4', '  5\n  6']);
  });

  it('names a bad pattern', () => {
    expect(() => new Multiline({ start: '(' }, async () => undefined)).toThrow(/invalid multiline pattern/);
    expect(() => new Multiline({}, async () => undefined)).toThrow(/needs a start or continuation pattern/);
  });
});
