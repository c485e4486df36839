import { createHash } from 'node:crypto';

/** A JSON value as the chain and anchor lines use it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * Canonical JSON (docs/ARCHIVE_FORMAT.md §"Canonical JSON"): RFC 8785 (JCS) restricted to what chain lines
 * hold. Object keys sorted by UTF-16 code units, no whitespace, strings escaped exactly as ECMAScript
 * JSON.stringify does, numbers only as safe integers in plain decimal. Anything else is refused, so two
 * implementations can never disagree on the bytes that get hashed.
 */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value === 'boolean') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new TypeError('canonical JSON holds only safe integers');
    return String(value);
  }
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  const parts: string[] = [];
  for (const key of keys) {
    const item = value[key];
    if (item === undefined) continue;
    parts.push(`${JSON.stringify(key)}:${canonicalJson(item)}`);
  }
  return `{${parts.join(',')}}`;
}

/** Lowercase hex SHA-256 of bytes or of a string's UTF-8 encoding. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
