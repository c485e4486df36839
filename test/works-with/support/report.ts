import type { TapRecord } from './tap';

/** One result row in the seed's "Works with" style: `<date>\t<name>\t<version>\tPASS|<failure>`. */
export interface Row {
  name: string;
  version: string;
  /** `PASS`, or the stated failure. */
  result: string;
  /** Figures behind the result (counts, sources): printed on a `#` line under the row, never message text. */
  detail?: string;
}

export const today = (): string => new Date().toISOString().slice(0, 10);

export function printRows(rows: Row[]): void {
  const date = today();
  for (const r of rows) {
    process.stdout.write(`${date}\t${r.name}\t${r.version}\t${r.result}\n`);
    if (r.detail) process.stdout.write(`#   ${r.detail}\n`);
  }
}

export const check = (name: string, version: string, ok: boolean, failure: string, detail?: string): Row => ({
  name,
  version,
  result: ok ? 'PASS' : failure,
  detail,
});

/** String values that say how a request is shaped rather than what it says; kept verbatim in recordings. */
const KEEP_KEYS = new Set(['role', 'type', 'stream', 'tool_choice', 'wire_api', 'cache_control', 'effort']);
/** Header names whose values are credentials; recordings keep header names only anyway, this is for the record. */
const SECRET_HEADERS = /authorization|api-key|token|cookie/i;

/**
 * The body with every string replaced by a placeholder that keeps only its length (`<text:123>`), except the few
 * structural values in KEEP_KEYS and tool names; numbers, booleans, array lengths and object keys stay. No message
 * text, no key, no path from the machine the client ran on survives.
 */
export function skeleton(value: unknown, key = '', inTools = false): unknown {
  if (typeof value === 'string') {
    if (KEEP_KEYS.has(key)) return value;
    if (inTools && key === 'name') return value;
    if (key === 'model') return '<model>';
    return `<text:${value.length}>`;
  }
  if (Array.isArray(value)) return value.map((v) => skeleton(v, key, inTools));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      // Tool names are shape (which tools a client ships), not content; everything else under tools is text.
      const tools = inTools || k === 'tools';
      out[k] = k === 'properties' && tools ? propertyNames(v) : skeleton(v, k, tools);
    }
    return out;
  }
  return value;
}

/** JSON-schema `properties`: keep the parameter names and types, drop descriptions. */
function propertyNames(v: unknown): unknown {
  if (!v || typeof v !== 'object') return skeleton(v);
  const out: Record<string, unknown> = {};
  for (const [k, p] of Object.entries(v as Record<string, unknown>)) {
    const t = p && typeof p === 'object' ? (p as Record<string, unknown>).type : undefined;
    out[k] = { type: t ?? '<schema>' };
  }
  return out;
}

/** What a recording keeps of one client request: the shape only. */
export interface RequestShape {
  method: string;
  route: string;
  query: string[];
  header_names: string[];
  credential_headers: string[];
  body_bytes: number;
  body_keys: string[];
  tools: number;
  items: number;
  stream: boolean;
  status: number;
  body_skeleton: unknown;
}

export function requestShape(rec: TapRecord): RequestShape {
  const u = new URL(rec.url, 'http://x');
  let json: unknown;
  try {
    json = rec.body.length ? JSON.parse(rec.body.toString('utf8')) : undefined;
  } catch {
    // Not JSON (a GET, a form): the shape is just its size, recorded below.
    json = undefined;
  }
  const obj =
    json && typeof json === 'object' && !Array.isArray(json) ? (json as Record<string, unknown>) : {};
  const tools = Array.isArray(obj.tools) ? obj.tools.length : 0;
  const items = Array.isArray(obj.messages) ? obj.messages : Array.isArray(obj.input) ? obj.input : [];
  return {
    method: rec.method,
    route: u.pathname,
    query: [...u.searchParams.keys()],
    header_names: Object.keys(rec.headers).sort(),
    credential_headers: Object.keys(rec.headers).filter((h) => SECRET_HEADERS.test(h)),
    body_bytes: rec.body.length,
    body_keys: Object.keys(obj).sort(),
    tools,
    items: items.length,
    stream: obj.stream === true,
    status: rec.status,
    body_skeleton: skeleton(json),
  };
}
