/**
 * APL in the editor: highlighting (a stream tokenizer: strings, numbers, comments, operators, functions,
 * dataset references) and completion (datasets, the fields of the datasets the query names, tabular
 * operators, functions, keywords).
 */
import { StreamLanguage, type StringStream } from '@codemirror/language';
import type { Completion, CompletionContext, CompletionResult } from '@codemirror/autocomplete';
import { AGGREGATE_FUNCTIONS, KEYWORDS, SCALAR_FUNCTIONS, TABULAR_OPERATORS } from './apl-words';

const OPERATORS = new Set(TABULAR_OPERATORS);
const WORDS = new Set(KEYWORDS);
const FUNCTIONS = new Set([...SCALAR_FUNCTIONS, ...AGGREGATE_FUNCTIONS]);

interface State {
  /** After a pipe: the next word is a tabular operator. */
  afterPipe: boolean;
}

function token(stream: StringStream, state: State): string | null {
  if (stream.eatSpace()) return null;
  if (stream.match('//')) {
    stream.skipToEnd();
    return 'comment';
  }
  const ch = stream.peek()!;
  if (ch === '"' || ch === "'") {
    stream.next();
    let escaped = false;
    for (let c = stream.next(); c !== undefined; c = stream.next()) {
      if (c === ch && !escaped) break;
      escaped = !escaped && c === '\\';
    }
    return 'string';
  }
  if (stream.match(/^\[\s*(['"]).*?\1\s*\]/)) return 'string.special';
  if (stream.match(/^\d+(\.\d+)?(e[+-]?\d+)?(d|h|m|s|ms|us|ns|tick)?\b/i)) return 'number';
  if (ch === '|') {
    stream.next();
    state.afterPipe = true;
    return 'operator';
  }
  if (stream.match(/^[A-Za-z_$][\w$]*(-[a-z]+)*/)) {
    const word = stream.current();
    const wasPipe = state.afterPipe;
    state.afterPipe = false;
    if (wasPipe && OPERATORS.has(word)) return 'keyword';
    if (stream.peek() === '(' && FUNCTIONS.has(word)) return 'function';
    if (WORDS.has(word)) return 'operatorKeyword';
    return 'variableName';
  }
  stream.next();
  state.afterPipe = false;
  return /[=<>!+\-*/%~]/.test(ch) ? 'operator' : 'punctuation';
}

export const aplLanguage = StreamLanguage.define<State>({
  name: 'apl',
  startState: () => ({ afterPipe: false }),
  token,
  languageData: { commentTokens: { line: '//' } },
});

/** Datasets a query names: ['name'] and bare names at the start or after union/join/lookup. */
export function datasetsNamed(text: string): string[] {
  const out = new Set<string>();
  for (const m of text.matchAll(/\[\s*(['"])(.*?)\1\s*\]/g)) out.add(m[2]!);
  const head = /^\s*([A-Za-z_][\w.-]*)/.exec(text);
  if (head && !OPERATORS.has(head[1]!)) out.add(head[1]!);
  return [...out];
}

export interface CompletionSources {
  datasets(): Promise<string[]>;
  fields(dataset: string): Promise<{ name: string; type: string }[]>;
}

export function aplCompletion(sources: CompletionSources) {
  return async (ctx: CompletionContext): Promise<CompletionResult | null> => {
    const before = ctx.state.sliceDoc(0, ctx.pos);
    // Inside ['…']: dataset names.
    const quoted = /\[\s*(['"])([^'"]*)$/.exec(before);
    if (quoted) {
      const names = await sources.datasets();
      return { from: ctx.pos - quoted[2]!.length, options: names.map((n) => ({ label: n, type: 'class' })) };
    }
    const word = ctx.matchBefore(/[\w$-]*/);
    if (!word || (word.from === word.to && !ctx.explicit && !/\|\s*$/.test(before))) return null;
    // Right after a pipe: tabular operators only.
    if (/\|\s*[\w-]*$/.test(before))
      return { from: word.from, options: TABULAR_OPERATORS.map((o) => ({ label: o, type: 'keyword' })) };
    const options: Completion[] = [];
    if (!/\|/.test(before)) {
      for (const n of await sources.datasets()) options.push({ label: `['${n}']`, type: 'class', detail: 'dataset' });
    }
    const seen = new Set<string>();
    for (const ds of datasetsNamed(ctx.state.doc.toString())) {
      for (const f of await sources.fields(ds).catch(() => [])) {
        if (seen.has(f.name)) continue;
        seen.add(f.name);
        options.push({
          label: /^[A-Za-z_][\w]*$/.test(f.name) ? f.name : `['${f.name}']`,
          type: 'property',
          detail: f.type,
        });
      }
    }
    for (const f of SCALAR_FUNCTIONS) options.push({ label: f, type: 'function', apply: `${f}(` });
    for (const f of AGGREGATE_FUNCTIONS)
      options.push({ label: f, type: 'function', detail: 'aggregation', apply: `${f}(` });
    for (const k of KEYWORDS) options.push({ label: k, type: 'keyword' });
    return { from: word.from, options, validFor: /^[\w$-]*$/ };
  };
}
