/**
 * The config schema compiled ahead of time by `npm run build` (src/cli/build-config-validator.ts): it is
 * made from the current schema, and it answers every document as the schema compiled at run time does (the
 * same documents pass, the same keys are named in the same words), over the example configs and seeded
 * random damage to them. One made from another schema is not used.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { CONFIG_SCHEMA, PRECOMPILED_VALIDATOR_FILE } from '../../../src/cli/config.js';
import { documentValidator, schemaHash, type PrecompiledValidator } from '../../../src/config/document.js';
import { testSeed } from '../../support/helpers.js';

const built = createRequire(import.meta.url)(
  `../../../dist/src/cli/${PRECOMPILED_VALIDATOR_FILE}`,
) as PrecompiledValidator;

type Doc = Record<string, unknown>;

/** The example configs, as documents (those in Kubernetes manifests from their ConfigMaps). */
function examples(): Doc[] {
  const files = readdirSync('config', { recursive: true, encoding: 'utf8' }).filter((f) => /\.ya?ml$/.test(f));
  const docs: unknown[] = [];
  for (const f of files) {
    for (const d of parseAllDocuments(readFileSync(join('config', f), 'utf8'))) {
      const doc = d.toJS() as { kind?: string; data?: Record<string, string> } | null;
      if (doc?.kind === 'ConfigMap') docs.push(...Object.values(doc.data ?? {}).map((text) => parse(text) as unknown));
      else if (!doc?.kind) docs.push(doc);
    }
  }
  return docs.filter((d): d is Doc => typeof d === 'object' && d !== null && !Array.isArray(d));
}

/** Every object inside `doc` (itself included). */
function objectsIn(doc: unknown, out: Doc[] = []): Doc[] {
  if (doc && typeof doc === 'object') {
    if (!Array.isArray(doc)) out.push(doc as Doc);
    for (const v of Object.values(doc)) objectsIn(v, out);
  }
  return out;
}

/** One random change to one object of `doc`: a key added, removed, retyped or given a word nobody knows. */
function damage(doc: Doc, rnd: () => number): Doc {
  const copy = structuredClone(doc);
  const objects = objectsIn(copy);
  const target = objects[Math.floor(rnd() * objects.length)]!;
  const keys = Object.keys(target);
  const key = keys[Math.floor(rnd() * keys.length)];
  const r = rnd();
  if (r < 0.2 || key === undefined) target[`colr${Math.floor(rnd() * 3)}`] = 1;
  else if (r < 0.35) delete target[key];
  else if (r < 0.55) target[key] = 'bogus';
  else if (r < 0.7) target[key] = -1;
  else if (r < 0.8) target[key] = { nested: true };
  else if (r < 0.9) target[key] = [1, 'two'];
  else target[key] = typeof target[key] === 'string' ? `${target[key] as string}x` : null;
  return copy;
}

function outcome(validate: (doc: unknown) => unknown, doc: Doc): string {
  try {
    validate(doc);
    return 'valid';
  } catch (e) {
    return `${(e as Error).message} @ ${(e as { path?: string }).path}`;
  }
}

describe('the config validator compiled by the build', () => {
  it('is made from the current schema', () => {
    expect(built.schemaHash).toBe(schemaHash(CONFIG_SCHEMA));
  });

  it('answers as the schema compiled at run time does, over the examples and random damage to them', () => {
    const { rnd, replay } = testSeed(
      'CONFIG_VALIDATOR_SEED',
      'npx vitest run test/unit/config/precompiled-validator.test.ts',
    );
    const ahead = documentValidator(CONFIG_SCHEMA, () => built);
    const compiled = documentValidator(CONFIG_SCHEMA);
    const docs = examples();
    expect(docs.length).toBeGreaterThanOrEqual(6);
    let invalid = 0;
    for (const doc of docs) expect(outcome(ahead, doc), replay).toBe(outcome(compiled, doc));
    for (let i = 0; i < 300; i++) {
      const doc = damage(docs[Math.floor(rnd() * docs.length)]!, rnd);
      const expected = outcome(compiled, doc);
      if (expected !== 'valid') invalid++;
      expect(outcome(ahead, doc), `${replay}: ${JSON.stringify(doc)}`).toBe(expected);
    }
    // The damage is mostly caught: the comparison is of errors, not only of documents that pass.
    expect(invalid).toBeGreaterThan(150);
  });

  it('one made from another schema is not used', () => {
    const stale = Object.assign(() => true, { schemaHash: 'another schema' }) as PrecompiledValidator;
    const validate = documentValidator(CONFIG_SCHEMA, () => stale);
    expect(() => validate({ service: { colour: 'red' } })).toThrow(/service\.colour: unknown key/);
  });
});
