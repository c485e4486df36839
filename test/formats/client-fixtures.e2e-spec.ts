import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { startStack, type Stack } from '../support/stack';
import type { FixtureRequest } from './fixtures/claude-code-shape';
import { FIXTURES } from './fixtures/write-fixtures';
import { checkAnthropic, checkResponses, type Json } from './support/checks';

/**
 * Requests shaped like Claude Code's and Codex's (fixtures/: built from the clients' documented formats, not
 * recorded; see each file's _note). Under the budget they must reach the upstream byte for byte; over it, as a
 * valid compacted request the upstream answers.
 */
function load(name: string): FixtureRequest {
  return JSON.parse(readFileSync(join(__dirname, 'fixtures', name), 'utf8')) as FixtureRequest;
}

async function send(stack: Stack, f: FixtureRequest): Promise<{ status: number; text: string; raw: string }> {
  const raw = JSON.stringify(f.body);
  const res = await fetch(`${stack.guardian.url}${f.path}`, {
    method: f.method,
    headers: f.headers,
    body: raw,
  });
  return { status: res.status, text: await res.text(), raw };
}

const first = load('claude-code-first.json');
const session = load('claude-code-session.json');
const codex = load('codex-session.json');

describe('client-shaped fixtures', () => {
  it('are what the builders make, and the Claude Code first request has the documented size and parts', () => {
    for (const [name, build] of Object.entries(FIXTURES)) {
      expect(JSON.parse(readFileSync(join(__dirname, 'fixtures', name), 'utf8'))).toEqual(build());
    }
    const bytes = Buffer.byteLength(JSON.stringify(first.body));
    expect(bytes).toBeGreaterThanOrEqual(50 * 1024);
    expect(bytes).toBeLessThanOrEqual(130 * 1024);
    const tools = first.body.tools as unknown[];
    expect(tools.length).toBeGreaterThanOrEqual(12);
    expect(tools.length).toBeLessThanOrEqual(25);
    expect(first.body).toMatchObject({
      thinking: expect.any(Object),
      context_management: expect.any(Object),
      output_config: expect.any(Object),
    });
    expect(first.headers['anthropic-beta']!.split(',').length).toBeGreaterThanOrEqual(6);
    expect(codex.body.input).toEqual(
      expect.arrayContaining([expect.objectContaining({ type: 'function_call_output' })]),
    );
  });

  describe('under the budget', () => {
    let stack: Stack;
    beforeAll(async () => {
      stack = await startStack({
        stub: { window: 400_000 },
        env: { GUARDIAN_NUM_CTX: '400000', GUARDIAN_RESERVE_OUTPUT: '32000' },
      });
    });
    afterAll(async () => {
      await stack.close();
    });

    it.each([
      ['Claude Code first request', first],
      ['Claude Code later request', session],
      ['Codex request', codex],
    ])('passes the %s through unchanged, path, query and headers included', async (_name, f) => {
      const res = await send(stack, f);
      expect(res.status).toBe(200);
      const rec = stack.stub.requests.at(-1)!;
      expect(rec.path).toBe(f.path);
      // Claude Code's no-op context edit is applied by guardian, its member cut from the bytes; every other byte as sent.
      const { context_management: _applied, ...rest } = f.body;
      const expected = f.path.startsWith('/v1/messages') ? JSON.stringify(rest) : res.raw;
      // Compared as a boolean: a 100 KB diff helps nobody, and the summary check below names what changed.
      expect(rec.body.equals(Buffer.from(expected))).toBe(true);
      for (const name of ['anthropic-beta', 'anthropic-version', 'x-api-key', 'authorization', 'originator'])
        expect(rec.headers[name]).toBe(f.headers[name]);
      expect(stack.stub.requests.some((r) => r.isSummary)).toBe(false);
    });
  });

  describe('over the budget', () => {
    it('compacts the Claude Code later request into a valid one the upstream answers', async () => {
      const tokens = (await import('@guardian/stub-backend')).countPrompt(session.body, 'messages');
      const window = Math.round(tokens * 1.05);
      const stack = await startStack({
        stub: { flavor: 'anthropic', window },
        env: { GUARDIAN_NUM_CTX: String(window), GUARDIAN_RESERVE_OUTPUT: '4000' },
      });
      try {
        const res = await send(stack, session);
        expect(res.status).toBe(200);
        expect(res.text).toContain('event: message_stop');
        const rec = stack.stub.requests.filter((r) => r.route === 'messages' && !r.isSummary).at(-1)!;
        expect(rec.path).toBe('/v1/messages?beta=true');
        const verdict = checkAnthropic(session.body, rec.json as Json);
        expect(verdict).toMatchObject({ compacted: true, problems: [] });
        expect(verdict.summary).toContain(
          'Remember this: the billing fixtures live in FACT-CC-fixtures/billing.',
        );
        expect(stack.stub.countPrompt(rec.json, 'messages')).toBeLessThan(tokens);
        const summariser = stack.stub.requests.find((r) => r.isSummary)!;
        expect(summariser.headers).toMatchObject({
          'x-api-key': 'sk-ant-fixture-key',
          'anthropic-beta': first.headers['anthropic-beta'],
        });
      } finally {
        await stack.close();
      }
    });

    it('compacts the Codex request into a valid one the upstream answers', async () => {
      const tokens = (await import('@guardian/stub-backend')).countPrompt(codex.body, 'responses');
      const window = Math.round(tokens * 0.9);
      const stack = await startStack({
        stub: { window },
        env: { GUARDIAN_NUM_CTX: String(window), GUARDIAN_RESERVE_OUTPUT: '2000' },
      });
      try {
        const res = await send(stack, codex);
        expect(res.status).toBe(200);
        expect(res.text).toContain('response.completed');
        const rec = stack.stub.requests.filter((r) => r.route === 'responses' && !r.isSummary).at(-1)!;
        const verdict = checkResponses(codex.body, rec.json as Json);
        expect(verdict).toMatchObject({ compacted: true, problems: [] });
        expect(verdict.summary).toContain('Remember this: the release branch is FACT-CODEX-rel-7.');
        expect(stack.stub.countPrompt(rec.json, 'responses')).toBeLessThanOrEqual(window);
        expect(stack.stub.requests.find((r) => r.isSummary)?.headers.authorization).toBe(
          'Bearer sk-codex-fixture',
        );
      } finally {
        await stack.close();
      }
    });
  });
});
