import { request as httpRequest } from 'node:http';

import { startStack, type Stack } from '../support/stack';
import { eventually, getJson, type Json } from './support';

// Issue 21 item 7: what guardian does with the bytes a client really puts in X-Guardian-Session. Sent with
// node:http so the test controls the bytes on the wire: curl sends a UTF-8 value as its raw bytes, and a header
// set twice (a config file and an environment variable, say) arrives as two header lines.

/** The header as curl sends `X-Guardian-Session: <text>` from a UTF-8 terminal: the text's UTF-8 bytes. */
const utf8 = (text: string): string => Buffer.from(text, 'utf8').toString('latin1');

interface Answer {
  status: number;
  warning: string | undefined;
  body: Json;
}

function post(stack: Stack, session: string | string[] | undefined, text = 'hello'): Promise<Answer> {
  const headers: Record<string, string | string[]> = { 'content-type': 'application/json' };
  if (session !== undefined) headers['x-guardian-session'] = session;
  const body = JSON.stringify({ model: 'stub-model', messages: [{ role: 'user', content: text }] });
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${stack.baseURL}/chat/completions`, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const warning = res.headers['x-guardian-warning'];
        resolve({
          status: res.statusCode ?? 0,
          warning: Array.isArray(warning) ? warning.join(', ') : warning,
          body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json,
        });
      });
    });
    req.on('error', reject);
    // A Buffer, not a string: node:http writes a string body in one piece with the headers, in the body's UTF-8,
    // which would encode the header's bytes a second time.
    req.end(Buffer.from(body, 'utf8'));
  });
}

async function usageStatus(stack: Stack, session: string): Promise<number> {
  return (await getJson(`${stack.guardian.url}/guardian/usage?session=${encodeURIComponent(session)}`))
    .status;
}

async function sessionCount(stack: Stack): Promise<number> {
  return ((await getJson(`${stack.guardian.url}/guardian/stats`)).body.sessions as Json[]).length;
}

async function ignoredCount(stack: Stack, reason: string): Promise<number> {
  const text = await (await fetch(`${stack.guardian.url}/metrics`)).text();
  const m = new RegExp(`^guardian_session_header_ignored_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(
    text,
  );
  return Number(m?.[1] ?? Number.NaN);
}

describe('X-Guardian-Session values as clients send them', () => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await startStack({ stub: { flavor: 'vllm', window: 8192 } });
  });
  afterEach(async () => {
    await stack.close();
  });

  it('reads a UTF-8 value as UTF-8: `josé` is the session the status line asks for', async () => {
    const sent = await post(stack, utf8('josé'));
    expect(sent.status).toBe(200);
    expect(sent.warning).toBeUndefined();
    await eventually(async () => ((await usageStatus(stack, 'josé')) === 200 ? true : undefined));
    expect(await usageStatus(stack, 'josÃ©')).toBe(404);
  });

  it('measures the 256-byte limit in bytes sent: 128 é (256 bytes) is kept, 129 é (258 bytes) is ignored', async () => {
    const fits = await post(stack, utf8('é'.repeat(128)));
    expect(fits.warning).toBeUndefined();
    await eventually(async () => ((await usageStatus(stack, 'é'.repeat(128))) === 200 ? true : undefined));
    const over = await post(stack, utf8('é'.repeat(129)));
    expect(over.status).toBe(200);
    expect(over.warning).toMatch(/X-Guardian-Session ignored: over 256 bytes/);
  });

  it('treats an empty value (OpenCode with USER unset) as no header, and says so', async () => {
    const empty = await post(stack, '');
    expect(empty.status).toBe(200);
    expect(empty.warning).toMatch(/X-Guardian-Session ignored: empty/);
    await post(stack, undefined);
    await eventually(async () => ((await sessionCount(stack)) === 1 ? true : undefined));
    // One session: the empty header fell back to the same derived key as no header at all.
    await post(stack, 'dev-1');
    await eventually(async () => ((await usageStatus(stack, 'dev-1')) === 200 ? true : undefined));
    expect(await sessionCount(stack)).toBe(2);
    expect(await ignoredCount(stack, 'empty')).toBe(1);
  });

  it('ignores a header sent twice with different values instead of merging them into "dave, erin"', async () => {
    const twice = await post(stack, ['dave', 'erin']);
    expect(twice.status).toBe(200);
    expect(twice.warning).toMatch(/X-Guardian-Session ignored: sent 2 times with different values/);
    await post(stack, undefined);
    await eventually(async () => ((await sessionCount(stack)) === 1 ? true : undefined));
    expect(await usageStatus(stack, 'dave, erin')).toBe(404);
    expect(await usageStatus(stack, 'dave')).toBe(404);
    expect(await ignoredCount(stack, 'repeated')).toBe(1);
  });

  it('accepts the same value sent twice', async () => {
    const twice = await post(stack, ['carol', 'carol']);
    expect(twice.warning).toBeUndefined();
    await eventually(async () => ((await usageStatus(stack, 'carol')) === 200 ? true : undefined));
  });
});

describe('X-Guardian-Session values with GUARDIAN_SESSION_HEADER_REQUIRED=1', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      stub: { flavor: 'vllm', window: 8192 },
      env: { GUARDIAN_SESSION_HEADER_REQUIRED: '1' },
    });
  });
  afterAll(async () => {
    await stack.close();
  });

  it.each([
    ['an empty value', '', /empty/],
    ['two different values', ['dave', 'erin'], /sent 2 times with different values/],
  ])('refuses %s with 400 GUARDIAN_SESSION_REQUIRED and says why', async (_what, session, why) => {
    const refused = await post(stack, session);
    expect(refused.status).toBe(400);
    const error = refused.body.error as Json;
    expect(error.code).toBe('GUARDIAN_SESSION_REQUIRED');
    expect(String(error.message)).toMatch(why);
    expect(stack.stub.requests.filter((r) => r.route === 'chat')).toHaveLength(0);
  });

  // docs/sessions.md: only the three compacted routes need the header; Claude Code's HEAD / probe never carries it.
  it.each([
    ['HEAD', '/', undefined],
    ['GET', '/v1/models', undefined],
    [
      'POST',
      '/v1/messages/count_tokens',
      { model: 'stub-model', messages: [{ role: 'user', content: 'hi' }] },
    ],
    ['POST', '/tokenize', { model: 'stub-model', prompt: 'hi' }],
  ])('forwards %s %s without the header', async (method, path, body) => {
    const before = stack.stub.requests.length;
    const res = await fetch(`${stack.guardian.url}${path}`, {
      method,
      headers: body ? { 'content-type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
    await res.arrayBuffer();
    expect(res.status).toBe(200);
    // Guardian's own window probe (a count is measured against the window) may go first; nothing else does.
    const sent = stack.stub.requests.slice(before).map((r) => `${r.method} ${r.path}`);
    const own = sent.indexOf(`${method} ${path}`);
    expect(own).toBeGreaterThanOrEqual(0);
    expect(sent.filter((line, i) => i !== own && line !== 'GET /v1/models')).toEqual([]);
  });

  it('serves a UTF-8 value', async () => {
    expect((await post(stack, utf8('josé'))).status).toBe(200);
  });
});
