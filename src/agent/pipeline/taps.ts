/**
 * Taps on the flow (`ferry tap`): the events leaving named sources, transforms or a route's outputs,
 * copied as the sinks would ship them to whoever listens, without ever slowing the flow: each listener
 * has a rate (events per second) and a bound on what it has not read yet, and what is past either is
 * counted as skipped, not waited for. With nobody listening to a component, its events pay one lookup.
 */
import { lineOf } from '../delivery/delivery.js';
import { splitLines } from '../delivery/batch.js';
import type { Envelope } from '../transforms/transform.js';

/** One listener: the components it taps, its filter, and where its lines go. */
export interface TapListener {
  readonly components: ReadonlySet<string>;
  /** The filter on an event's fields (`--where`); absent, every event. */
  readonly test?: (data: Readonly<Record<string, unknown>>) => boolean;
  /** Whether it takes an event now (within its rate and its reader's pace); if not, it counts one skipped. */
  ready(): boolean;
  /** Takes an event's line (JSON), once ready and past the filter. */
  offer(component: string, line: string): void;
}

export class TapHub {
  private readonly byComponent = new Map<string, Set<TapListener>>();

  /** Whether anyone listens to a component now (checked on every event: one lookup). */
  listening(component: string): boolean {
    return this.byComponent.has(component);
  }

  add(l: TapListener): void {
    for (const c of l.components) {
      let set = this.byComponent.get(c);
      if (!set) this.byComponent.set(c, (set = new Set()));
      set.add(l);
    }
  }

  remove(l: TapListener): void {
    for (const c of l.components) {
      const set = this.byComponent.get(c);
      set?.delete(l);
      if (set?.size === 0) this.byComponent.delete(c);
    }
  }

  get listeners(): number {
    return new Set([...this.byComponent.values()].flatMap((s) => [...s])).size;
  }

  /** Hands a copy of an event leaving `component` to its listeners; a place (a dropped event) is no event. */
  offer(component: string, e: Envelope): void {
    if (e.dropped) return;
    const set = this.byComponent.get(component);
    if (!set) return;
    if (e.raw && e.lines !== undefined && e.lines > 1) {
      // A run of lines is NDJSON, as a batch is: shown as its lines, one event each.
      for (const text of splitLines(e.raw)) this.offerEach(set, component, { ...e, text, raw: undefined, lines: 1 });
      return;
    }
    this.offerEach(set, component, e);
  }

  private offerEach(set: Set<TapListener>, component: string, e: Envelope): void {
    let line: string | undefined;
    let data: Readonly<Record<string, unknown>> | undefined;
    for (const l of set) {
      if (!l.ready()) continue;
      line ??= tapLine(e);
      if (l.test) {
        data ??= e.event?.data ?? (JSON.parse(line) as Record<string, unknown>);
        // The listener's own filter must not stop the flow, whatever it does.
        let pass = false;
        try {
          pass = l.test(data);
        } catch {
          pass = false;
        }
        if (!pass) continue;
      }
      l.offer(component, line);
    }
  }
}

/**
 * An event's line as a tap shows it: JSON, always. A raw line that only looks like an object (`{…}`, which
 * sinks ship as it is for the receiver to judge) is checked here, and goes as `{message}` when it is not one.
 */
function tapLine(e: Envelope): string {
  const line = String(lineOf(e));
  if (e.event) return line;
  try {
    const v = JSON.parse(line) as unknown;
    if (v && typeof v === 'object' && !Array.isArray(v)) return line;
  } catch {
    // not JSON: shown as a message
  }
  return JSON.stringify({ message: line });
}
