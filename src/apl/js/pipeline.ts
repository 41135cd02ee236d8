/**
 * An APL pipeline over one event at a time (`where status >= 500 | extend slow = d > 1s | project-away
 * secret`), parsed, bound and compiled once into closures (./compile.ts): an agent's `apl` transform runs
 * it on every event it sees, never through DuckDB. Errors name the line and column in the pipeline's text.
 */
import { bindEventPipeline, type EventStage } from '../binder/event-pipeline.js';
import { sortNames, wildcardMatch } from '../binder/relation.js';
import type { NamePattern } from '../parser/ast.js';
import { parsePipeline } from '../parser/parser.js';
import { compileExpr, type Ev, type Row } from './compile.js';
import { converter, fieldValue } from './values.js';

/** The event a pipeline works on: its fields, and the changes it makes (an agent Event keeps its text right). */
export interface EventFields {
  readonly data: Readonly<Record<string, unknown>>;
  set(key: string, value: unknown): void;
  delete(key: string): void;
  /** The event becomes exactly these fields, in this order. */
  replace(fields: Record<string, unknown>): void;
}

/** One operator, compiled: false when the event is dropped. */
type Step = (e: EventFields) => boolean;

export interface EventPipeline {
  /** Runs the pipeline on an event, changing it; false when an operator (`where`) drops it. */
  run(e: EventFields): boolean;
  /** The operators, one per line, for `ferry validate`. */
  readonly stages: readonly EventStage[];
}

/** @throws AplError naming the line and column of what is wrong in `text` */
export function compileEventPipeline(text: string): EventPipeline {
  const stages = bindEventPipeline(parsePipeline(text), text);
  const ctx = { src: text };
  const steps = stages.map((s) => step(s, ctx));
  return {
    stages,
    run(e) {
      for (let i = 0; i < steps.length; i++) if (!steps[i]!(e)) return false;
      return true;
    },
  };
}

function step(s: EventStage, ctx: { src: string }): Step {
  switch (s.kind) {
    case 'where': {
      const p = compileExpr(s.predicate, ctx);
      const test =
        s.predicate.type === 'bool'
          ? p
          : (
              (c) => (row: Row) =>
                c(p(row))
            )(converter('dynamic', 'bool'));
      return (e) => test(e.data) === true;
    }
    case 'extend': {
      const items = s.items.map((i) => ({ name: i.name, ev: compileExpr(i.expr, ctx), type: i.expr.type }));
      return (e) => {
        for (const i of items) e.set(i.name, fieldValue(i.ev(e.data), i.type));
        return true;
      };
    }
    case 'project': {
      const items = s.items.map((i) => ({ name: i.name, ev: compileExpr(i.expr, ctx) as Ev, type: i.expr.type }));
      return (e) => {
        const out: Record<string, unknown> = {};
        for (const i of items) out[i.name] = fieldValue(i.ev(e.data), i.type);
        e.replace(out);
        return true;
      };
    }
    case 'project-away': {
      const matches = matcher(s.patterns);
      return (e) => {
        for (const k of Object.keys(e.data)) if (matches(k)) e.delete(k);
        return true;
      };
    }
    case 'project-keep': {
      const matches = matcher(s.patterns);
      return (e) => {
        for (const k of Object.keys(e.data)) if (!matches(k)) e.delete(k);
        return true;
      };
    }
    case 'project-rename':
      return (e) => {
        for (const { name, from } of s.items) {
          const had = Object.hasOwn(e.data, from);
          const v = e.data[from];
          e.delete(from);
          // A field renamed from one the event lacks is null: the event lacks it too.
          if (had) e.set(name, v);
          else e.delete(name);
        }
        return true;
      };
    case 'project-reorder':
      return (e) => {
        const keys = Object.keys(e.data);
        const front: string[] = [];
        for (const item of s.items) {
          const m = keys.filter(
            (k) =>
              !front.includes(k) &&
              (item.pattern.wildcard ? wildcardMatch(item.pattern.pattern, k) : item.pattern.pattern === k),
          );
          const ordered = item.order
            ? sortNames(
                m.map((name) => ({ name, type: 'dynamic' as const, alias: name })),
                item.order,
              ).map((c) => c.name)
            : m;
          front.push(...ordered);
        }
        const out: Record<string, unknown> = {};
        for (const k of front) out[k] = e.data[k];
        for (const k of keys) if (!Object.hasOwn(out, k)) out[k] = e.data[k];
        e.replace(out);
        return true;
      };
  }
}

function matcher(patterns: readonly NamePattern[]): (name: string) => boolean {
  const exact = new Set(patterns.filter((p) => !p.wildcard).map((p) => p.pattern));
  const wild = patterns.filter((p) => p.wildcard).map((p) => p.pattern);
  return (name) => exact.has(name) || wild.some((w) => wildcardMatch(w, name));
}
