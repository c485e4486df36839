// The bad-input corpus: what clients, proxies and attackers send that a well-behaved SDK never would. Each entry
// says what the client must get. `forwarded`: the request reaches the upstream byte for byte and the client hears
// the upstream's answer (ARCHITECTURE.md#fail-open rule 1: guardian is never the reason a request fails). A status:
// guardian refuses itself, only where ARCHITECTURE.md#fail-open rule 6 lets it, with a body shaped like the route's
// API and a stable code.

export const LIMIT = 1024 * 1024;

export interface Entry {
  name: string;
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Send the body with Transfer-Encoding: chunked instead of a Content-Length. */
  chunked?: boolean;
  expect: 'forwarded' | { status: number; code: string };
  /**
   * The parsers may throw on this one and fail open (forwarded unchanged, counted as an internal fail-open):
   * only for inputs no client sends, where the call stack itself runs out.
   */
  mayFailOpen?: boolean;
}

const CHAT = '/v1/chat/completions';
const MESSAGES = '/v1/messages';
const RESPONSES = '/v1/responses';
const JSON_TYPE = { 'content-type': 'application/json' };

const ok = (content: string) =>
  JSON.stringify({ model: 'stub-model', messages: [{ role: 'user', content }] });

const malformed: [string, string | Buffer][] = [
  ['an opening brace only', '{'],
  ['a cut-off object', '{"model":"stub-model","messages":[{"role":"user","content":"hel'],
  ['an empty body', ''],
  ['whitespace only', ' \n\t '],
  ['trailing garbage', `${ok('hi')}}}]]`],
  ['a byte order mark first', `\ufeff${ok('hi')}`],
  ['a lone surrogate escape', ok('\\ud800 alone').replace('\\\\ud800', '\\ud800')],
  ['a NUL inside a string', ok('a\u0000b')],
  [
    'invalid UTF-8 bytes',
    Buffer.concat([Buffer.from(ok('x').slice(0, -4)), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}]}')]),
  ],
  ['100,000 nested arrays', `${'['.repeat(100_000)}${']'.repeat(100_000)}`],
  [
    '100,000 nested objects in content',
    ok('x').replace('"x"', `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`),
  ],
  ['a number too big for a double', '{"model":"stub-model","max_tokens":1e999,"messages":[]}'],
  [
    'duplicate keys',
    '{"model":"a","model":"stub-model","messages":[],"messages":[{"role":"user","content":"hi"}]}',
  ],
  ['binary noise', Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256))],
];

const wrongTypes: [string, string, string][] = [
  ['model is an object', CHAT, '{"model":{"id":"stub-model"},"messages":[{"role":"user","content":"hi"}]}'],
  ['messages is a string', CHAT, '{"model":"stub-model","messages":"hi"}'],
  ['role is a number', CHAT, '{"model":"stub-model","messages":[{"role":7,"content":"hi"}]}'],
  [
    'stream is "yes"',
    CHAT,
    '{"model":"stub-model","stream":"yes","messages":[{"role":"user","content":"hi"}]}',
  ],
  [
    'tools is an object',
    CHAT,
    '{"model":"stub-model","tools":{"a":1},"messages":[{"role":"user","content":"hi"}]}',
  ],
  [
    'anthropic content is a number',
    MESSAGES,
    '{"model":"stub-model","max_tokens":8,"messages":[{"role":"user","content":5}]}',
  ],
  [
    'anthropic system is an array of numbers',
    MESSAGES,
    '{"model":"stub-model","max_tokens":8,"system":[1,2],"messages":[{"role":"user","content":"hi"}]}',
  ],
  ['responses input is a number', RESPONSES, '{"model":"stub-model","input":5}'],
  [
    'responses with previous_response_id (stateful)',
    RESPONSES,
    '{"model":"stub-model","previous_response_id":"resp_1","input":"hi"}',
  ],
];

/** Padding inside the JSON (between tokens), so the body parses and carries no messages: it passes through. */
const padded = (bytes: number) => {
  const head = '{"model":"stub-model","messages":[';
  return `${head}${' '.repeat(bytes - head.length - 2)}]}`;
};

export const CORPUS: Entry[] = [
  ...malformed.flatMap(([name, body]) =>
    [CHAT, MESSAGES, RESPONSES].map((path): Entry => ({
      name: `${name} on ${path}`,
      method: 'POST',
      path,
      headers: JSON_TYPE,
      body,
      expect: 'forwarded',
      mayFailOpen: name.startsWith('100,000 nested objects'),
    })),
  ),
  ...wrongTypes.map(([name, path, body]): Entry => ({
    name,
    method: 'POST',
    path,
    headers: JSON_TYPE,
    body,
    expect: 'forwarded',
  })),
  // Sizes around GUARDIAN_MAX_BODY_BYTES (1 MiB in this test).
  {
    name: 'a body 1 byte under the limit',
    method: 'POST',
    path: CHAT,
    headers: JSON_TYPE,
    body: padded(LIMIT - 1),
    expect: 'forwarded',
  },
  {
    name: 'a body 1 byte over the limit (Content-Length)',
    method: 'POST',
    path: CHAT,
    headers: JSON_TYPE,
    body: padded(LIMIT + 1),
    expect: { status: 413, code: 'GUARDIAN_BODY_TOO_LARGE' },
  },
  {
    name: 'a chunked body over the limit (no Content-Length)',
    method: 'POST',
    path: MESSAGES,
    headers: JSON_TYPE,
    body: padded(LIMIT + 64 * 1024),
    chunked: true,
    expect: { status: 413, code: 'GUARDIAN_BODY_TOO_LARGE' },
  },
  {
    name: 'a chunked body under the limit',
    method: 'POST',
    path: RESPONSES,
    headers: JSON_TYPE,
    body: ok('hi'),
    chunked: true,
    expect: 'forwarded',
  },
  // Odd headers.
  { name: 'no content-type', method: 'POST', path: CHAT, body: ok('hi'), expect: 'forwarded' },
  {
    name: 'content-type text/plain',
    method: 'POST',
    path: CHAT,
    headers: { 'content-type': 'text/plain' },
    body: ok('hi'),
    expect: 'forwarded',
  },
  {
    name: 'content-type multipart with no boundary',
    method: 'POST',
    path: CHAT,
    headers: { 'content-type': 'multipart/form-data' },
    body: ok('hi'),
    expect: 'forwarded',
  },
  {
    name: 'content-encoding gzip on a plain body',
    method: 'POST',
    path: CHAT,
    headers: { ...JSON_TYPE, 'content-encoding': 'gzip' },
    body: ok('hi'),
    expect: 'forwarded',
  },
  {
    name: 'a session header of 300 bytes (ignored, warned)',
    method: 'POST',
    path: CHAT,
    headers: { ...JSON_TYPE, 'x-guardian-session': 's'.repeat(300) },
    body: ok('hi'),
    expect: 'forwarded',
  },
  {
    name: 'a session header with traversal',
    method: 'POST',
    path: CHAT,
    headers: { ...JSON_TYPE, 'x-guardian-session': '../../../../etc/passwd' },
    body: ok('hi'),
    expect: 'forwarded',
  },
  {
    name: 'a dry-run header that is neither 1 nor true',
    method: 'POST',
    path: CHAT,
    headers: { ...JSON_TYPE, 'x-guardian-dry-run': 'maybe' },
    body: ok('hi'),
    expect: 'forwarded',
  },
  {
    name: '200 extra headers',
    method: 'POST',
    path: CHAT,
    headers: {
      ...JSON_TYPE,
      ...Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`x-extra-${i}`, `v${i}`])),
    },
    body: ok('hi'),
    expect: 'forwarded',
  },
  {
    name: 'an 8 KB bearer token',
    method: 'POST',
    path: CHAT,
    headers: { ...JSON_TYPE, authorization: `Bearer ${'k'.repeat(8192)}` },
    body: ok('hi'),
    expect: 'forwarded',
  },
  {
    name: 'expect: 100-continue',
    method: 'POST',
    path: CHAT,
    headers: { ...JSON_TYPE, expect: '100-continue' },
    body: ok('hi'),
    expect: 'forwarded',
  },
  // Paths and methods.
  {
    name: 'a trailing slash on the route (not one guardian reads)',
    method: 'POST',
    path: `${CHAT}/`,
    headers: JSON_TYPE,
    body: ok('hi'),
    expect: 'forwarded',
  },
  {
    name: 'a query string on the route',
    method: 'POST',
    path: `${CHAT}?api-version=2024-01-01&x=%00`,
    headers: JSON_TYPE,
    body: ok('hi'),
    expect: 'forwarded',
  },
  { name: 'a GET on the chat route', method: 'GET', path: CHAT, expect: 'forwarded' },
  {
    name: 'an encoded traversal under /v1',
    method: 'GET',
    path: '/v1/..%2f..%2fetc%2fpasswd',
    expect: 'forwarded',
  },
  {
    name: 'dot segments under /v1 (forwarded as sent, never resolved)',
    method: 'GET',
    path: '/v1/%2e%2e/%2e%2e/etc/passwd',
    expect: 'forwarded',
  },
  // Guardian's own endpoints: ids that try to leave their place.
  {
    name: 'usage for a traversal session id',
    method: 'GET',
    path: '/guardian/usage?session=../../../../etc/shadow',
    expect: { status: 404, code: 'GUARDIAN_NO_SESSION' },
  },
  {
    name: 'usage for an empty session id',
    method: 'GET',
    path: '/guardian/usage?session=',
    expect: { status: 400, code: 'GUARDIAN_BAD_SESSION' },
  },
  {
    name: 'usage for a 257-byte session id',
    method: 'GET',
    path: `/guardian/usage?session=${'x'.repeat(257)}`,
    expect: { status: 400, code: 'GUARDIAN_BAD_SESSION' },
  },
  {
    name: 'usage with the session id given twice',
    method: 'GET',
    path: '/guardian/usage?session=a&session=b',
    expect: { status: 400, code: 'GUARDIAN_BAD_SESSION' },
  },
  {
    name: 'an encoded traversal under /guardian',
    method: 'GET',
    path: '/guardian/%2e%2e/%2e%2e/etc/passwd',
    expect: { status: 404, code: 'GUARDIAN_NOT_FOUND' },
  },
  {
    name: 'an archive path with traversal',
    method: 'GET',
    path: '/guardian/archive/..%2f..%2fspans',
    expect: { status: 404, code: 'GUARDIAN_NOT_FOUND' },
  },
];
