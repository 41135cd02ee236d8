/**
 * `ferry components`: the sources, parsers, transforms and sinks this build knows, with their keys, read
 * from the registries. `--markdown` prints the README's table of component keys, and `--markdown
 * --section agent|service` the table of that section's keys; a test keeps the README's tables equal to them.
 */
import type { ComponentSpec, Registry } from '../config/registry.js';
import { keyRows, TABLE_HEAD } from '../config/key-table.js';
import type { Option } from '../config/options.js';
import { AGENT_OPTIONS, COMPONENT_SECTIONS } from '../agent/config.js';
import { SERVICE_OPTIONS } from '../service/config.js';
import { LOG_OPTIONS } from './config.js';
import { parsers } from '../agent/parsers/index.js';
import type { SourceSpec } from '../agent/sources/source.js';

const code = (s: string) => `\`${s}\``;
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The table rows of the component keys, as Markdown. */
export function componentsMarkdown(): string {
  const rows: string[] = [...TABLE_HEAD];
  for (const s of COMPONENT_SECTIONS) {
    const types = s.registry.specs.map(
      (c) => `${code(c.type)}: ${c.summary}${(c as SourceSpec).single ? ' (at most one)' : ''}`,
    );
    rows.push(`| ${code(`${s.key}.<name>.type`)} | ${cell(types.join('; '))} | required |`);
    rows.push(...keyRows(`${s.key}.<name>.`, s.common));
    // A key several types take alike (max_line_bytes) is one row naming them all.
    const byKey = new Map<string, { option: Option<unknown>; types: string[] }>();
    for (const c of s.registry.specs) {
      for (const [k, o] of Object.entries(c.options)) {
        const row = byKey.get(k);
        if (row && row.option === o) row.types.push(c.type);
        else byKey.set(row ? `${k} (${c.type})` : k, { option: o, types: [c.type] });
      }
    }
    for (const [k, r] of byKey) {
      const key = k.replace(/ \(.*\)$/, '');
      rows.push(...keyRows(`${s.key}.<name>.`, { [key]: r.option }, ` (${r.types.map(code).join(', ')})`));
    }
  }
  return `${rows.join('\n')}\n`;
}

/** The README's table of one section's keys: `agent`, or `service` (with `log`). */
export function sectionMarkdown(section: 'agent' | 'service'): string {
  const rows =
    section === 'agent'
      ? keyRows('agent.', AGENT_OPTIONS)
      : [...keyRows('log.', LOG_OPTIONS), ...keyRows('service.', SERVICE_OPTIONS)];
  return `${[...TABLE_HEAD, ...rows].join('\n')}\n`;
}

/** The registered components, for a terminal. */
export function componentsText(): string {
  const out: string[] = [];
  const list = (title: string, registry: Registry<ComponentSpec>) => {
    out.push(`${title}:`);
    for (const c of registry.specs) {
      out.push(`  ${c.type.padEnd(10)} ${c.summary}`);
      const keys = Object.keys(c.options);
      if (keys.length) out.push(`  ${''.padEnd(10)} keys: ${keys.join(', ')}`);
    }
  };
  const [sources, transforms, sinks] = COMPONENT_SECTIONS;
  list('sources', sources.registry);
  list('parsers (of the parse transform)', parsers);
  list('transforms', transforms.registry);
  list('sinks', sinks.registry);
  return `${out.join('\n')}\n`;
}

/**
 * `ferry help config [WORD]`: every config key with what it means and its default, for a terminal (the
 * README's tables as text); WORD keeps the keys that contain it (`compression`, `sinks`, `agent.api`).
 */
export function configHelp(word?: string): string | undefined {
  const rows = [
    ...sectionMarkdown('service').split('\n'),
    ...sectionMarkdown('agent').split('\n'),
    ...componentsMarkdown().split('\n'),
  ]
    .filter((l) => l.startsWith('| `'))
    .map((l) => {
      const cells = l
        .slice(2, -2)
        .split(/ (?<!\\)\| /)
        .map((c) => c.replace(/\\\|/g, '|').replace(/`/g, ''));
      return { key: cells[0]!, meaning: cells[1] ?? '', def: cells[2] ?? '' };
    })
    .filter((r) => !word || r.key.toLowerCase().includes(word.toLowerCase()));
  if (rows.length === 0) return undefined;
  return rows.map((r) => `${r.key}  (default: ${r.def})\n    ${r.meaning}\n`).join('');
}
