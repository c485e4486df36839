// Where things are in a JSON request body, without building it: the top-level members' byte ranges and, for the
// arrays asked for, each element's range. JSON.parse builds the whole object graph (every message, every string),
// which is most of what a request that fits costs guardian (ADR 0013); no kept library finds ranges without parsing,
// so this small scanner does. Strings are skipped with Buffer.indexOf, so its cost follows the number of values,
// not the number of bytes.

/** A value's bytes: `body.subarray(start, end)`. */
export interface Range {
  start: number;
  end: number;
}

export interface Outline {
  /** Each top-level member's value. A repeated key keeps its last value, as JSON.parse does. */
  fields: Map<string, Range>;
  /** For each array asked for (and present as an array), its elements' ranges. */
  items: Map<string, Range[]>;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** Thrown inside the scanner for any byte JSON does not allow where it stands; `outline` returns undefined then. */
class NotJson extends Error {}

function isSpace(b: number | undefined): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

/**
 * The outline of a body that is one JSON object, or undefined when it is not (not an object, malformed, truncated).
 * Structure is checked (brackets, commas, colons, string ends, literals and numbers); what is inside strings is not
 * (a bad escape passes), which is enough here: a body it accepts that JSON.parse would refuse is only forwarded.
 */
export function outline(body: Buffer, arrays: readonly string[] = []): Outline | undefined {
  try {
    return new Scanner(body, arrays).top();
  } catch (err) {
    if (err instanceof NotJson) return undefined;
    throw err;
  }
}

/** Outlines already made of a body, with the arrays they cover: the fast path and the full path read one body both. */
const made = new WeakMap<Buffer, { arrays: readonly string[]; outline: Outline | undefined }>();

/** `outline`, made once per body and set of arrays (the request's body is not changed while it is read). */
export function outlineOnce(body: Buffer, arrays: readonly string[]): Outline | undefined {
  const known = made.get(body);
  if (known && arrays.every((a) => known.arrays.includes(a))) return known.outline;
  const o = outline(body, arrays);
  made.set(body, { arrays, outline: o });
  return o;
}

/** A top-level string member's value, decoded; undefined when absent or not a string. */
export function stringField(body: Buffer, o: Outline, key: string): string | undefined {
  const r = o.fields.get(key);
  if (!r || body[r.start] !== QUOTE) return undefined;
  // Without a backslash the bytes between the quotes are the string's UTF-8 (JSON strings hold no raw quote).
  const inner = body.indexOf(BACKSLASH, r.start + 1);
  if (inner === -1 || inner >= r.end) return body.toString('utf8', r.start + 1, r.end - 1);
  const value = parseRange(body, r);
  return typeof value === 'string' ? value : undefined;
}

/** A top-level member parsed on its own (a number, a literal, a small object); undefined when absent. */
export function parseField(body: Buffer, o: Outline, key: string): unknown {
  const r = o.fields.get(key);
  return r ? parseRange(body, r) : undefined;
}

/** A range parsed on its own; undefined when it is not JSON after all (the outline does not check escapes). */
export function parseRange(body: Buffer, r: Range): unknown {
  try {
    return JSON.parse(body.toString('utf8', r.start, r.end)) as unknown;
  } catch {
    // A bad escape inside a string: the caller treats the value as absent and the full path decides.
    return undefined;
  }
}

/**
 * The body without one top-level member, every other byte as it came (ADR 0005): the member's key, value and one of
 * its commas cut out. Undefined when the member is absent. `key` is written without escapes, as JSON keys of the
 * APIs are.
 */
export function withoutField(body: Buffer, o: Outline, key: string): Buffer | undefined {
  const r = o.fields.get(key);
  if (!r) return undefined;
  // Between a member's key and its value there is only a colon and white space: the nearest key before the value is it.
  const keyAt = body.lastIndexOf(`"${key}"`, r.start, 'latin1');
  if (keyAt === -1) return undefined;
  let after = r.end;
  while (isSpace(body[after])) after++;
  if (body[after] === COMMA) return Buffer.concat([body.subarray(0, keyAt), body.subarray(after + 1)]);
  let before = keyAt - 1;
  while (isSpace(body[before])) before--;
  const from = body[before] === COMMA ? before : keyAt;
  return Buffer.concat([body.subarray(0, from), body.subarray(r.end)]);
}

/** True when `needle` occurs in the bytes of `r` (ASCII needles: a marker, a key name). */
export function rangeHas(body: Buffer, r: Range, needle: string): boolean {
  const at = body.indexOf(needle, r.start, 'latin1');
  return at !== -1 && at + needle.length <= r.end;
}

class Scanner {
  private i = 0;
  /**
   * `nested`'s stack of closers, one for the whole body, with its depth kept apart: an array per item, or one array
   * emptied and filled again (V8 gives back an emptied array's store), allocated on every item of every request.
   */
  private closers = new Uint8Array(32);

  constructor(
    private readonly b: Buffer,
    private readonly arrays: readonly string[],
  ) {}

  top(): Outline {
    const fields = new Map<string, Range>();
    const items = new Map<string, Range[]>();
    this.space();
    this.expect(OPEN_OBJECT);
    this.space();
    if (this.b[this.i] === CLOSE_OBJECT) this.i += 1;
    else {
      for (;;) {
        this.space();
        const keyStart = this.i;
        this.string();
        const key = this.key(keyStart, this.i);
        this.space();
        this.expect(COLON);
        this.space();
        const start = this.i;
        if (this.arrays.includes(key) && this.b[start] === OPEN_ARRAY) items.set(key, this.elements());
        else {
          items.delete(key);
          this.value();
        }
        fields.set(key, { start, end: this.i });
        this.space();
        if (this.b[this.i] === COMMA) {
          this.i += 1;
          continue;
        }
        this.expect(CLOSE_OBJECT);
        break;
      }
    }
    this.space();
    if (this.i !== this.b.length) throw new NotJson();
    return { fields, items };
  }

  private key(start: number, end: number): string {
    const raw = this.b.toString('latin1', start + 1, end - 1);
    if (!raw.includes('\\') && !/[^\x20-\x7e]/.test(raw)) return raw;
    const key = parseRange(this.b, { start, end });
    if (typeof key !== 'string') throw new NotJson();
    return key;
  }

  /** The elements of the array at `i`, each as a range. */
  private elements(): Range[] {
    const out: Range[] = [];
    this.i += 1;
    this.space();
    if (this.b[this.i] === CLOSE_ARRAY) {
      this.i += 1;
      return out;
    }
    for (;;) {
      this.space();
      const start = this.i;
      this.value();
      out.push({ start, end: this.i });
      this.space();
      if (this.b[this.i] === COMMA) {
        this.i += 1;
        continue;
      }
      this.expect(CLOSE_ARRAY);
      return out;
    }
  }

  /** Skips one value of any kind, checking its structure. */
  private value(): void {
    const c = this.b[this.i];
    if (c === QUOTE) return this.string();
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) return this.nested();
    this.scalar();
  }

  /** Skips an object or array, however deep, with a stack of what each open bracket expects next. */
  private nested(): void {
    const b = this.b;
    // Per open bracket: its closer (closers[0, depth)), and whether the next thing is a key (objects) or a value.
    let depth = 0;
    let wantKey = false;
    let afterItem = false;
    for (;;) {
      this.space();
      const c = b[this.i];
      if (c === undefined) throw new NotJson();
      if (afterItem) {
        afterItem = false;
        const closer = this.closers[depth - 1];
        if (c === COMMA) {
          this.i += 1;
          wantKey = closer === CLOSE_OBJECT;
          continue;
        }
        if (c !== closer) throw new NotJson();
        this.i += 1;
        depth -= 1;
        if (depth === 0) return;
        afterItem = true;
        continue;
      }
      if (wantKey) {
        wantKey = false;
        this.string();
        this.space();
        this.expect(COLON);
        continue;
      }
      if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        if (depth === this.closers.length) {
          const deeper = new Uint8Array(depth * 2);
          deeper.set(this.closers);
          this.closers = deeper;
        }
        const closer = c === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY;
        this.closers[depth] = closer;
        depth += 1;
        this.i += 1;
        this.space();
        if (b[this.i] === closer) {
          // An empty object or array closes at once.
          this.i += 1;
          depth -= 1;
          if (depth === 0) return;
          afterItem = true;
          continue;
        }
        wantKey = c === OPEN_OBJECT;
        continue;
      }
      if (c === QUOTE) this.string();
      else this.scalar();
      afterItem = true;
    }
  }

  /** Skips a string: finds the closing quote that no backslash escapes. */
  private string(): void {
    const b = this.b;
    if (b[this.i] !== QUOTE) throw new NotJson();
    let at = this.i + 1;
    for (;;) {
      const q = b.indexOf(QUOTE, at);
      if (q === -1) throw new NotJson();
      let slashes = 0;
      for (let k = q - 1; b[k] === BACKSLASH; k -= 1) slashes += 1;
      if (slashes % 2 === 0) {
        this.i = q + 1;
        return;
      }
      at = q + 1;
    }
  }

  /** A number, `true`, `false` or `null`, checked on the bytes (not made into a string for a regular expression). */
  private scalar(): void {
    const b = this.b;
    const start = this.i;
    let end = start;
    for (;;) {
      const c = b[end];
      if (c === undefined || c === COMMA || c === CLOSE_OBJECT || c === CLOSE_ARRAY || isSpace(c)) break;
      end += 1;
    }
    if (!isLiteral(b, start, end) && !isNumber(b, start, end)) throw new NotJson();
    this.i = end;
  }

  private space(): void {
    while (isSpace(this.b[this.i])) this.i += 1;
  }

  private expect(byte: number): void {
    if (this.b[this.i] !== byte) throw new NotJson();
    this.i += 1;
  }
}

const LITERALS = ['true', 'false', 'null'].map((l) => Buffer.from(l));

function isLiteral(b: Buffer, start: number, end: number): boolean {
  for (const l of LITERALS)
    if (l.length === end - start && b.compare(l, 0, l.length, start, end) === 0) return true;
  return false;
}

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;

/** RFC 8259 §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, the whole of [start, end). */
function isNumber(b: Buffer, start: number, end: number): boolean {
  let i = start;
  if (b[i] === 0x2d) i += 1;
  if (b[i] === 0x30) i += 1;
  else if (isDigit(b[i])) while (i < end && isDigit(b[i])) i += 1;
  else return false;
  if (i < end && b[i] === 0x2e) {
    i += 1;
    if (!(i < end && isDigit(b[i]))) return false;
    while (i < end && isDigit(b[i])) i += 1;
  }
  if (i < end && (b[i] === 0x65 || b[i] === 0x45)) {
    i += 1;
    if (i < end && (b[i] === 0x2b || b[i] === 0x2d)) i += 1;
    if (!(i < end && isDigit(b[i]))) return false;
    while (i < end && isDigit(b[i])) i += 1;
  }
  return i === end;
}
