import { describe, expect, it } from 'vitest';
import {
  collectAfterLargeResults,
  collectGarbage,
  holdWhileSent,
  isOutOfMemory,
  noteResultCells,
} from '../../../../src/service/store/native-memory.js';

describe('memory DuckDB results hold outside V8', () => {
  it('collects garbage on demand, without Node started with --expose-gc', async () => {
    let held: object | undefined = { result: new Array(1000).fill('chunk') };
    const ref = new WeakRef(held);
    held = undefined;
    // A WeakRef's target lives at least until the end of the job that made it.
    await new Promise((r) => setImmediate(r));
    collectGarbage();
    expect(ref.deref()).toBeUndefined();
  });

  it('collects once an answer is sent after 16 MiB of result text, and not before', async () => {
    collectGarbage(); // counts from here
    let held: object | undefined = { result: new Array(1000).fill('chunk') };
    const ref = new WeakRef(held);
    held = undefined;
    await new Promise((r) => setImmediate(r));
    noteResultCells(1000, 15 * 1024 * 1024);
    collectAfterLargeResults();
    expect(ref.deref()).toBeDefined();
    await new Promise((r) => setImmediate(r)); // deref() too keeps its target to the job's end
    noteResultCells(1000, 1024 * 1024);
    collectAfterLargeResults();
    expect(ref.deref()).toBeUndefined();
  });

  it('puts the collection off while a large answer is still being sent, and collects when the last one is', async () => {
    collectGarbage();
    let held: object | undefined = { result: new Array(1000).fill('chunk') };
    const ref = new WeakRef(held);
    held = undefined;
    await new Promise((r) => setImmediate(r));
    const first = holdWhileSent();
    const second = holdWhileSent();
    noteResultCells(1000, 17 * 1024 * 1024);
    collectAfterLargeResults(); // another answer's onResponse
    first();
    first(); // a release called twice lets go once
    expect(ref.deref()).toBeDefined();
    await new Promise((r) => setImmediate(r));
    second();
    expect(ref.deref()).toBeUndefined();
  });

  it("knows DuckDB's ways of saying it is short of memory, and nothing else", () => {
    expect(
      isOutOfMemory(
        new Error('Out of Memory Error: failed to allocate data of size 32.0 MiB (466.7 MiB/488.2 MiB used)'),
      ),
    ).toBe(true);
    expect(
      isOutOfMemory(
        new Error(
          'TransactionContext Error: Failed to commit: failed to pin block of size 256.0 KiB (488.1 MiB/488.2 MiB used)',
        ),
      ),
    ).toBe(true);
    expect(isOutOfMemory(new Error('Binder Error: Referenced column "x" not found'))).toBe(false);
    expect(isOutOfMemory('Out of Memory Error')).toBe(false);
  });
});
