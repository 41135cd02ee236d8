/**
 * The compiled SQL kept with a binding (src/service/query/kept-compiles.ts): what it answers is what compile
 * answers for the same options, every option that changes the SQL tells two keeps apart, and a request
 * with a range or a cursor is compiled afresh.
 */
import { describe, expect, it } from 'vitest';
import { bind } from '../../../../src/apl/binder/binder.js';
import { compile, type CompileOptions } from '../../../../src/apl/compiler/compiler.js';
import { parseQuery } from '../../../../src/apl/parser/parser.js';
import type { DatasetSchema } from '../../../../src/apl/types.js';
import { compileKept } from '../../../../src/service/query/kept-compiles.js';
import { formatRfc3339Nano, RecentTimeTexts } from '../../../../src/util/time.js';

const ACCESS: DatasetSchema = {
  table: 't_access',
  fields: [
    { name: 'method', column: 'f1', type: 'string' },
    { name: 'status', column: 'f2', type: 'long' },
  ],
};

function stagesOf(apl: string) {
  return bind(parseQuery(apl), apl, {
    schema: (d) => (d === 'access' ? ACCESS : undefined),
    nowNs: 0n,
    binAutoNs: 60_000_000_000n,
    rangeNs: 86_400_000_000_000n,
    datasets: () => ['access'],
  }).stages;
}

describe('compiled SQL kept with its binding', () => {
  it('answers what compile answers, for each set of options, and keeps the whole-data ones', () => {
    const stages = stagesOf("['access'] | where status >= 500 | summarize count() by method | sort by method");
    // Events as rows: the legacy format's _sysTime changes their SQL.
    const events = stagesOf("['access'] | where status >= 500");
    expect(compileKept(events, { limit: 1001 }).sql).toBe(compile(events, { limit: 1001 }).sql);
    expect(compileKept(events, { limit: 1001, sysTime: true }).sql).toBe(
      compile(events, { limit: 1001, sysTime: true }).sql,
    );
    expect(compile(events, { limit: 1001, sysTime: true }).sql).not.toBe(compile(events, { limit: 1001 }).sql);
    const options: CompileOptions[] = [
      { limit: 1001 },
      { limit: 11 },
      { limit: 1001, sysTime: true },
      { limit: 1001, matchedAt: 2 },
      { limit: 1001, matchedCte: 1 },
      { limit: 1001, startNs: 1_000n, endNs: 2_000n },
      { limit: 1001, cursor: { at: { timeNs: 5n, seq: 1n }, descending: true, inclusive: false } },
    ];
    // Twice round: the second finds the first's keeps, each under its own options.
    for (let round = 0; round < 2; round++) {
      for (const opts of options) expect(compileKept(stages, opts).sql).toBe(compile(stages, opts).sql);
    }
    expect(new Set(options.slice(0, 2).map((o) => compileKept(stages, o).sql)).size).toBe(2);
    expect(compileKept(stages, { limit: 1001 })).toBe(compileKept(stages, { limit: 1001 }));
    const ranged = { limit: 1001, startNs: 1_000n, endNs: 2_000n };
    expect(compileKept(stages, ranged)).not.toBe(compileKept(stages, ranged));
    const later = { ...ranged, endNs: 3_000n };
    expect(compileKept(stages, later).sql).toBe(compile(stages, later).sql);
    expect(compileKept(stages, later).sql).not.toBe(compileKept(stages, ranged).sql);
  });

  it('keeps each binding apart: another query of the same text shape is not answered with the first', () => {
    const a = stagesOf("['access'] | where status >= 500 | count");
    const b = stagesOf("['access'] | where status >= 400 | count");
    expect(compileKept(a, { limit: 1001 }).sql).toContain('500');
    expect(compileKept(b, { limit: 1001 }).sql).toContain('400');
  });
});

describe('RecentTimeTexts', () => {
  it('writes every time as formatRfc3339Nano does, through more times than it keeps and back', () => {
    const texts = new RecentTimeTexts(2);
    const times = [0n, 1n, 1_767_225_600_123_456_789n, -1n, 0n, 1n, 1_767_225_600_123_456_789n, 0n, 0n];
    for (const ns of times) expect(texts.text(ns)).toBe(formatRfc3339Nano(ns));
  });
});
