/**
 * An event on its way to the sinks: its fields and, while they are exactly the JSON text of its line plus
 * fields added with add(), that text, which the sink ships instead of serialising the event again
 * (`JSON.stringify` was a quarter of the parse mode's CPU). The event owns the text: set, add and delete
 * keep it or drop it themselves, so no transform can ship text that no longer says the event.
 */
import { plainTextLacksKey, withoutMember } from '../util/json-members.js';
import type { LogEvent } from './parsers/parser.js';

/** A field added to many events, with its JSON member text made once, not once per event. */
export interface AddedField {
  readonly key: string;
  readonly value: unknown;
  /** `,"key":value`: what is spliced into an event's text before its closing brace. */
  readonly member: string;
}

export function addedField(key: string, value: unknown): AddedField {
  return { key, value, member: `,${JSON.stringify(key)}:${JSON.stringify(value)}` };
}

/** Lines checked in a window; when the check paid for fewer than half, the next stretch is parsed at once. */
const FIELDS_WINDOW = 4096;
/** How many events are parsed at once, when the check did not pay, before it is tried again. */
const PARSED_STRETCH = 16 * FIELDS_WINDOW;

/**
 * Whether a source's or parser's lines are checked for a flat JSON object and made into events of their
 * text, the fields parsed when first read (Event.ofText). The check pays where a line passes it and
 * nothing reads its fields (a line enriched and shipped); it costs where lines fail it (nested values)
 * or their fields are read anyway (an apl filter reads each event). What the last window of lines met
 * decides the next stretch.
 */
export class FieldsOnRead {
  private checked = 0;
  /** Lines of the window for which the check did not pay: failed, or made from text and read. */
  private wasted = 0;
  private parsedLeft = 0;

  /** Whether the next line is to be checked (and, if it passes, made from its text). */
  fromText(): boolean {
    if (this.parsedLeft > 0) {
      this.parsedLeft--;
      return false;
    }
    if (this.checked >= FIELDS_WINDOW) {
      if (this.wasted * 2 > this.checked) this.parsedLeft = PARSED_STRETCH;
      this.checked = this.wasted = 0;
      if (this.parsedLeft > 0) return false;
    }
    return true;
  }

  /** A line passed the check: its event is made from its text. */
  noteMade(): void {
    this.checked++;
  }

  /** A line failed the check: it is parsed at once. */
  noteFailed(): void {
    this.checked++;
    this.wasted++;
  }

  /** The fields of an event made from its text were read. */
  noteRead(): void {
    this.wasted++;
  }
}

export class Event {
  private constructor(
    /** Undefined until read, for an event made from its text (ofText): then the text parsed, plus `added`. */
    private parsed: LogEvent | undefined,
    /** The line's JSON text, while the fields are exactly it parsed plus `added`. */
    private text: string | undefined,
    private added: AddedField[] | undefined,
    /** Told when the fields of an event made from its text are first read. */
    private readonly onRead?: FieldsOnRead,
  ) {}

  /** Whether the text (of an event not yet parsed) has no backslash, once asked. */
  private plain: boolean | undefined;

  /**
   * An event from its fields; `text`, the line they were parsed from when they are exactly its JSON (an
   * object with at least one member, to splice fields into before its closing brace).
   */
  static of(fields: LogEvent, text?: string): Event {
    return new Event(fields, text !== undefined && isObjectText(text) ? text : undefined, undefined);
  }

  /**
   * An event from a line known to be a JSON object's text with at least one member (isFlatJsonObject): its
   * fields are `JSON.parse(text)`, parsed only when something reads them.
   */
  static ofText(text: string, onRead: FieldsOnRead): Event {
    onRead.noteMade();
    return new Event(undefined, text, undefined, onRead);
  }

  private get fields(): LogEvent {
    return this.parsed ?? this.parse();
  }

  /** The fields of an event made from its text, read for the first time. */
  private parse(): LogEvent {
    this.onRead?.noteRead();
    const fields = JSON.parse(this.text!) as LogEvent;
    if (this.added) for (const f of this.added) setField(fields, f.key, f.value);
    return (this.parsed = fields);
  }

  get(key: string): unknown {
    return this.fields[key];
  }

  /** Whether the event has the field (a field deleted from it holds undefined, which no JSON value is). */
  has(key: string): boolean {
    return this.fields[key] !== undefined && Object.hasOwn(this.fields, key);
  }

  /** The fields, to read (a change goes through set, add or delete). */
  get data(): Readonly<LogEvent> {
    return this.fields;
  }

  /** Whether the sink will ship the line's own text. */
  get keepsText(): boolean {
    return this.text !== undefined;
  }

  set(key: string, value: unknown): void {
    setField(this.fields, key, value);
    this.dropText();
  }

  /** Sets a field made once for many events: spliced into the text, unless the event already has the key. */
  add(f: AddedField): void {
    if (this.parsed === undefined && this.lacksUnread(f)) {
      (this.added ??= []).push(f);
      return;
    }
    if (this.text !== undefined) {
      if (this.has(f.key)) this.dropText();
      else (this.added ??= []).push(f);
    }
    setField(this.fields, f.key, f.value);
  }

  /** Whether an event not yet parsed surely lacks the field, from its text alone (plainTextLacksKey). */
  private lacksUnread(f: AddedField): boolean {
    this.plain ??= this.text!.indexOf('\\') < 0;
    if (!this.plain || !plainTextLacksKey(this.text!, f.key)) return false;
    if (this.added) for (const a of this.added) if (a.key === f.key) return false;
    return true;
  }

  /** The event becomes exactly these fields (a projection), in their order. */
  replace(fields: LogEvent): void {
    this.parsed = fields;
    this.dropText();
  }

  /**
   * Sets a field (an apl `extend`): one the event lacks is spliced into its text, which it keeps.
   * @param keyJson the key's JSON, when the caller made it once for many events
   */
  put(key: string, value: unknown, keyJson = JSON.stringify(key)): void {
    this.add({ key, value, member: `,${keyJson}:${jsonOf(value)}` });
  }

  delete(key: string): void {
    if (!this.has(key)) return;
    // Undefined rather than `delete`, which turns the object into a slow dictionary; JSON skips it.
    setField(this.fields, key, undefined);
    if (this.text === undefined) return;
    // The key was spliced in, or is in the line's own text: the text goes on without it where it can.
    const spliced = this.added?.findIndex((f) => f.key === key) ?? -1;
    if (spliced >= 0) {
      this.added!.splice(spliced, 1);
      return;
    }
    const cut = withoutMember(this.text, key, true);
    if (cut === undefined) this.dropText();
    else this.text = cut;
  }

  /** The NDJSON line the sink ships. */
  line(): string {
    if (this.text === undefined) return JSON.stringify(this.fields);
    if (!this.added) return this.text;
    let tail = '';
    for (const f of this.added) tail += f.member;
    return `${this.text.slice(0, -1)}${tail}}`;
  }

  /** A copy for another branch of the flow, which may change it without touching this one. */
  clone(): Event {
    if (this.parsed === undefined) return new Event(undefined, this.text, this.added?.slice(), this.onRead);
    return new Event({ ...this.parsed }, this.text, this.added?.slice());
  }

  private dropText(): void {
    // Fields not yet read are parsed first: the text is what they are.
    if (this.parsed === undefined) this.parse();
    this.text = undefined;
    this.added = undefined;
  }
}

/** A value's JSON, as JSON.stringify writes it: scalars without its call, which costs more than the rest of put. */
function jsonOf(value: unknown): string {
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    default:
      return value === null ? 'null' : JSON.stringify(value);
  }
}

/** `{…}` with at least one member: the shape a field can be spliced into before the closing brace. */
function isObjectText(text: string): boolean {
  if (text.charCodeAt(0) !== 0x7b || text.charCodeAt(text.length - 1) !== 0x7d) return false;
  // A key right after the brace, as a line mostly has it, needs no pattern.
  return text.charCodeAt(1) === 0x22 || !/^\{\s*\}$/.test(text);
}

/** Sets an own field, `__proto__` included (an assignment to it would set the object's prototype instead). */
function setField(fields: LogEvent, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(fields, key, { value, enumerable: true, writable: true, configurable: true });
  else fields[key] = value;
}
