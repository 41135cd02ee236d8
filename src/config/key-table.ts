/**
 * The README's tables of config keys, written from the keys' declarations (options.ts): a key's row says
 * what its declaration says, so the documented default is the one the code uses. A group's keys get a
 * row each (`sinks.<name>.batch.max_bytes`).
 */
import type { OptionSpecs } from './options.js';

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** One row per key (and per key of a group), `prefix` before each name; `note` after it (the types that take it). */
export function keyRows(prefix: string, specs: OptionSpecs, note = ''): string[] {
  const rows: string[] = [];
  for (const [k, o] of Object.entries(specs)) {
    const key = `${prefix}${k}`;
    if (o.keys) {
      if (o.description)
        rows.push(`| \`${key}\`${note} | ${cell(o.description)} | ${cell(o.shownDefault ?? 'none')} |`);
      rows.push(...keyRows(`${key}.`, o.keys, note));
    } else {
      const def = o.isRequired ? 'required' : (o.shownDefault ?? 'none');
      rows.push(`| \`${key}\`${note} | ${cell(o.description)} | ${cell(def)} |`);
    }
  }
  return rows;
}

export const TABLE_HEAD = ['| key | meaning | default |', '|---|---|---|'];

/** A whole table of the keys of one section (`service.`). */
export function keyTable(prefix: string, specs: OptionSpecs): string {
  return `${[...TABLE_HEAD, ...keyRows(prefix, specs)].join('\n')}\n`;
}
