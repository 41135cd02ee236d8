/**
 * `ferry components`: the sources, parsers, transforms and sinks this build knows, with their keys, read
 * from the registries. `--markdown` prints the README's table of component keys, and `--markdown
 * --section agent|service` the table of that section's keys; a test keeps the README's tables equal to them.
 */
import type { ComponentSpec, Registry } from '../config/registry.js';
import { keyEntries, markdownTable, type KeyEntry } from '../config/key-table.js';
import type { Option } from '../config/options.js';
import { AGENT_OPTIONS, COMPONENT_SECTIONS } from '../agent/config.js';
import { SERVICE_OPTIONS } from '../service/config.js';
import { LOG_OPTIONS } from './config.js';
import { parsers } from '../agent/parsers/index.js';
import type { SourceSpec } from '../agent/sources/source.js';

const code = (s: string) => `\`${s}\``;

/** The component keys: each section's `type`, the keys all its types take, then each type's own. */
function componentEntries(): KeyEntry[] {
  const out: KeyEntry[] = [];
  for (const s of COMPONENT_SECTIONS) {
    const types = s.registry.specs.map(
      (c) => `${code(c.type)}: ${c.summary}${(c as SourceSpec).single ? ' (at most one)' : ''}`,
    );
    out.push({ key: `${s.key}.<name>.type`, meaning: types.join('; '), def: 'required' });
    out.push(...keyEntries(`${s.key}.<name>.`, s.common));
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
      out.push(...keyEntries(`${s.key}.<name>.`, { [key]: r.option }, r.types));
    }
  }
  return out;
}

/** One section's keys: `agent`, or `service` (with `log`). */
function sectionEntries(section: 'agent' | 'service'): KeyEntry[] {
  return section === 'agent'
    ? keyEntries('agent.', AGENT_OPTIONS)
    : [...keyEntries('log.', LOG_OPTIONS), ...keyEntries('service.', SERVICE_OPTIONS)];
}

/** The README's table of the component keys. */
export function componentsMarkdown(): string {
  return markdownTable(componentEntries());
}

/** The README's table of one section's keys. */
export function sectionMarkdown(section: 'agent' | 'service'): string {
  return markdownTable(sectionEntries(section));
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
  const text = (s: string) => s.replace(/`/g, '');
  const rows = [...sectionEntries('service'), ...sectionEntries('agent'), ...componentEntries()]
    .map((e) => ({ label: `${e.key}${e.types ? ` (${e.types.join(', ')})` : ''}`, e }))
    .filter((r) => !word || r.label.toLowerCase().includes(word.toLowerCase()));
  if (rows.length === 0) return undefined;
  return rows.map(({ label, e }) => `${label}  (default: ${text(e.def)})\n    ${text(e.meaning)}\n`).join('');
}
