/**
 * Annotations: marks on datasets' timelines (a deploy, an incident), with a time and an optional end.
 * Create takes {type, datasets, title?, description?, url?, time?, endTime?}; update takes any subset. A type is
 * lowercase letters, digits and hyphens; url is any text.
 */
import { randomBytes } from 'node:crypto';
import { canonicalKeys, FieldError, optionalTime } from '../bodies/fields.js';

export interface Annotation {
  id: string;
  type: string;
  datasets: string[];
  title: string;
  description: string;
  url: string;
  time: string;
  endTime: string | null;
  createdAt: string;
  createdBy: string;
}

const KEYS = ['type', 'datasets', 'title', 'description', 'url', 'time', 'endTime'] as const;

export function newAnnotationId(): string {
  return `ann_${randomBytes(12).toString('base64url').replace(/[-_]/g, '').slice(0, 14).padEnd(14, '0')}`;
}

type Fields = Pick<Annotation, 'type' | 'datasets' | 'title' | 'description' | 'url' | 'time' | 'endTime'>;

/** Reads a create body (over nothing) or an update body (over the stored annotation). */
export function readAnnotationBody(body: unknown, nowIso: string, base?: Annotation): Fields {
  const b = canonicalKeys(body, KEYS, {}, 'annotation');
  const str = (k: 'type' | 'title' | 'description' | 'url'): string => {
    const v = b[k];
    if (v === undefined) return base?.[k] ?? '';
    if (v === null) return '';
    if (typeof v !== 'string') throw new FieldError(k, 'must be a string');
    return v;
  };
  const type = str('type');
  if (!type) throw new FieldError('type', 'is required (for example "deploy")');
  // Axiom's rule: a type is a slug, so it groups annotations the same way wherever it is typed.
  if (!/^[a-z0-9-]+$/.test(type))
    throw new FieldError(
      'type',
      `may hold only lowercase letters, digits and hyphens (for example "production-deploy"), not ${JSON.stringify(type)}`,
    );
  let datasets = base?.datasets ?? [];
  if (b.datasets !== undefined) {
    if (!Array.isArray(b.datasets) || b.datasets.some((d) => typeof d !== 'string' || !d))
      throw new FieldError('datasets', 'must be an array of dataset names');
    datasets = [...new Set(b.datasets as string[])];
  }
  if (!datasets.length) throw new FieldError('datasets', 'is required: the datasets the annotation marks');
  // Any text, as Axiom takes it: a link is the usual content, but clients send other references too.
  const url = str('url');
  const time = b.time !== undefined ? (optionalTime(b.time, 'time') ?? nowIso) : (base?.time ?? nowIso);
  const endTime = b.endTime !== undefined ? optionalTime(b.endTime, 'endTime') : (base?.endTime ?? null);
  if (endTime !== null && Date.parse(endTime) < Date.parse(time))
    throw new FieldError('endTime', `(${endTime}) is before time (${time})`);
  return { type, datasets, title: str('title'), description: str('description'), url, time, endTime };
}

/** Whether the annotation overlaps [startMs, endMs] (either bound may be open). */
export function overlaps(a: Annotation, startMs?: number, endMs?: number): boolean {
  const from = Date.parse(a.time);
  const to = a.endTime ? Date.parse(a.endTime) : from;
  return (startMs === undefined || to >= startMs) && (endMs === undefined || from <= endMs);
}

export function annotationView(a: Annotation): Record<string, unknown> {
  const { createdAt: _c, createdBy: _b, ...shown } = a;
  return shown;
}
