/**
 * The tables of config keys (the README's, and `ferry help config`), written from the keys' declarations
 * (options.ts): a key's row says what its declaration says, so the documented default is the one the code
 * uses. A group's keys get a row each (`sinks.<name>.batch.max_bytes`).
 */
import type { OptionSpecs } from './options.js';

/** One key: its path, the component types that take it (if not all), what it means, its default. */
export interface KeyEntry {
  key: string;
  types?: string[];
  meaning: string;
  def: string;
}

/** One entry per key (and per key of a group), `prefix` before each name; `types` the types that take it. */
export function keyEntries(prefix: string, specs: OptionSpecs, types?: string[]): KeyEntry[] {
  const out: KeyEntry[] = [];
  for (const [k, o] of Object.entries(specs)) {
    const key = `${prefix}${k}`;
    if (o.keys) {
      if (o.description) out.push({ key, types, meaning: o.description, def: o.shownDefault ?? 'none' });
      out.push(...keyEntries(`${key}.`, o.keys, types));
    } else {
      out.push({ key, types, meaning: o.description, def: o.isRequired ? 'required' : (o.shownDefault ?? 'none') });
    }
  }
  return out;
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const code = (s: string) => `\`${s}\``;

/** The entries as a Markdown table. */
export function markdownTable(entries: KeyEntry[]): string {
  const rows = entries.map(
    (e) =>
      `| ${code(e.key)}${e.types ? ` (${e.types.map(code).join(', ')})` : ''} | ${cell(e.meaning)} | ${cell(e.def)} |`,
  );
  return `${['| key | meaning | default |', '|---|---|---|', ...rows].join('\n')}\n`;
}
