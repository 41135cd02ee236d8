/**
 * `ferry components`: the sources, parsers, transforms and sinks this build knows, with their keys, read
 * from the registries. `--markdown` prints the README's table of component keys, which a test keeps equal
 * to this output.
 */
import type { ComponentSpec, Registry } from '../config/registry.js';
import { COMPONENT_SECTIONS } from '../agent/config.js';
import { parsers } from '../agent/parsers/index.js';
import type { SourceSpec } from '../agent/sources/source.js';

const code = (s: string) => `\`${s}\``;
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The table rows of the component keys, as Markdown. */
export function componentsMarkdown(): string {
  const rows: string[] = ['| key | meaning | default |', '|---|---|---|'];
  for (const s of COMPONENT_SECTIONS) {
    const types = s.registry.specs.map(
      (c) => `${code(c.type)}: ${c.summary}${(c as SourceSpec).single ? ' (at most one)' : ''}`,
    );
    rows.push(`| ${code(`${s.key}.<name>.type`)} | ${cell(types.join('; '))} | required |`);
    for (const [k, o] of Object.entries(s.common)) {
      rows.push(
        `| ${code(`${s.key}.<name>.${k}`)} | ${cell(o.doc)} | ${(s.required as readonly string[]).includes(k) ? 'required' : cell(o.default ?? 'none')} |`,
      );
    }
    // A key several types take alike (max_line_bytes) is one row naming them all.
    const byKey = new Map<string, { doc: string; default?: string; types: string[]; required: boolean }>();
    for (const c of s.registry.specs) {
      for (const [k, o] of Object.entries(c.options)) {
        const row = byKey.get(k);
        if (row && row.doc === o.doc) row.types.push(c.type);
        else
          byKey.set(row ? `${k} (${c.type})` : k, {
            doc: o.doc,
            default: o.default,
            types: [c.type],
            required: c.required?.includes(k) ?? false,
          });
      }
    }
    for (const [k, r] of byKey) {
      const key = k.replace(/ \(.*\)$/, '');
      rows.push(
        `| ${code(`${s.key}.<name>.${key}`)} (${r.types.map(code).join(', ')}) | ${cell(r.doc)} | ${r.required ? 'required' : cell(r.default ?? 'none')} |`,
      );
    }
  }
  return `${rows.join('\n')}\n`;
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
