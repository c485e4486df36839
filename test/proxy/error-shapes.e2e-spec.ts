import { startStack, type Stack } from '../support/stack';

/**
 * Every edge that answers in guardian's own name (the proxy, the /guardian endpoints, the Fastify hooks, the Nest
 * filter) answers with the same body shape for the same API style: OpenAI `{"error":{message,type,param,code}}`,
 * Anthropic `{"type":"error","error":{type,message,code}}` (docs/ARCHITECTURE.md#errors). Pinned whole, so a
 * refactor of where the bodies are built cannot change what a client reads.
 */
type Answer = { status: number; body: unknown };

async function send(url: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(url, init);
  return { status: res.status, body: JSON.parse(await res.text()) as unknown };
}

const chat = (content: string): string =>
  JSON.stringify({ model: 'stub-model', messages: [{ role: 'user', content }] });
const json = { 'content-type': 'application/json' };

describe('error bodies at every edge', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      env: { GUARDIAN_SESSION_HEADER_REQUIRED: '1', GUARDIAN_MAX_BODY_BYTES: '2048' },
    });
  });
  afterAll(async () => {
    await stack.close();
  });

  it('proxy: a missing session header, as OpenAI and as Anthropic', async () => {
    expect(
      await send(`${stack.baseURL}/chat/completions`, { method: 'POST', headers: json, body: chat('hi') }),
    ).toEqual({
      status: 400,
      body: {
        error: {
          message: expect.stringContaining('X-Guardian-Session'),
          type: 'invalid_request_error',
          param: null,
          code: 'GUARDIAN_SESSION_REQUIRED',
        },
      },
    });
    expect(
      await send(`${stack.baseURL}/messages`, { method: 'POST', headers: json, body: chat('hi') }),
    ).toEqual({
      status: 400,
      body: {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: expect.stringContaining('X-Guardian-Session'),
          code: 'GUARDIAN_SESSION_REQUIRED',
        },
      },
    });
  });

  it('Fastify body limit: 413, as OpenAI and as Anthropic', async () => {
    const big = chat('x'.repeat(5000));
    expect(
      await send(`${stack.baseURL}/chat/completions`, { method: 'POST', headers: json, body: big }),
    ).toEqual({
      status: 413,
      body: {
        error: {
          message: 'request body over GUARDIAN_MAX_BODY_BYTES',
          type: 'invalid_request_error',
          param: null,
          code: 'GUARDIAN_BODY_TOO_LARGE',
        },
      },
    });
    expect(await send(`${stack.baseURL}/messages`, { method: 'POST', headers: json, body: big })).toEqual({
      status: 413,
      body: {
        type: 'error',
        error: {
          type: 'request_too_large',
          message: 'request body over GUARDIAN_MAX_BODY_BYTES',
          code: 'GUARDIAN_BODY_TOO_LARGE',
        },
      },
    });
  });

  it('guardian namespace hook: an unknown /guardian path is a 404', async () => {
    expect(await send(`${stack.guardian.url}/guardian/nope`)).toEqual({
      status: 404,
      body: {
        error: {
          message: 'no such guardian endpoint',
          type: 'invalid_request_error',
          param: null,
          code: 'GUARDIAN_NOT_FOUND',
        },
      },
    });
  });

  it('guardian endpoints (Nest filter): a bad and an unknown session', async () => {
    expect(await send(`${stack.guardian.url}/guardian/usage?session=a&session=b`)).toEqual({
      status: 400,
      body: {
        error: {
          message: 'give session once',
          type: 'invalid_request_error',
          param: null,
          code: 'GUARDIAN_BAD_SESSION',
        },
      },
    });
    expect(await send(`${stack.guardian.url}/guardian/usage?session=${'x'.repeat(300)}`)).toEqual({
      status: 400,
      body: {
        error: {
          message: 'session must be 1-256 bytes',
          type: 'invalid_request_error',
          param: null,
          code: 'GUARDIAN_BAD_SESSION',
        },
      },
    });
    expect(await send(`${stack.guardian.url}/guardian/usage?session=nobody`)).toEqual({
      status: 404,
      body: {
        error: {
          message: 'unknown session',
          type: 'invalid_request_error',
          param: null,
          code: 'GUARDIAN_NO_SESSION',
        },
      },
    });
  });
});

describe('error bodies when the upstream cannot be reached', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
    await stack.stub.close();
  });
  afterAll(async () => {
    await stack.stopGuardian();
  });

  it('proxy: 502 UPSTREAM_UNREACHABLE, as OpenAI and as Anthropic', async () => {
    const oa = await send(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      headers: json,
      body: chat('hi'),
    });
    expect(oa).toEqual({
      status: 502,
      body: {
        error: {
          message: expect.stringMatching(/^the upstream could not be reached \(/),
          type: 'server_error',
          param: null,
          code: 'UPSTREAM_UNREACHABLE',
        },
      },
    });
    const an = await send(`${stack.baseURL}/messages`, { method: 'POST', headers: json, body: chat('hi') });
    expect(an).toEqual({
      status: 502,
      body: {
        type: 'error',
        error: {
          type: 'api_error',
          message: expect.stringMatching(/^the upstream could not be reached \(/),
          code: 'UPSTREAM_UNREACHABLE',
        },
      },
    });
  });
});
