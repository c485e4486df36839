import { createServer as createHttpServer } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server, type Socket } from 'node:net';

import { sha256Hex } from '@guardian/archive';

import { startStack, type Stack } from '../../../test/support/stack';
import type { ReadyAnswer, StatsAnswer } from './api-types';
import { GuardianClient, GuardianClientError, type ClientErrorCode } from './guardian-client';

// The client against a real sidecar (booted in-process before the stub backend): every call it makes, the bodies
// it reads, and every code a failed call carries. The team-mode calls (tokens, scoping) are in
// remote-archive.int-spec.ts.

/** Every key of StatsAnswer, and no other: the compiler holds this list to the type, the test holds the wire to it. */
const STATS_KEYS: Record<keyof StatsAnswer, true> = {
  version: true,
  upstream: true,
  replica: true,
  started_at: true,
  num_ctx: true,
  window_source: true,
  windows: true,
  effective_input_budget: true,
  compactions_performed: true,
  summaries_reused: true,
  summaries_chunked: true,
  summary_retries: true,
  summary_checkpoints: true,
  summariser_calls: true,
  precompact: true,
  summary_waits: true,
  behind: true,
  summariser_circuits: true,
  summary_wait_seconds: true,
  oversized_spills: true,
  compactions_with_pins: true,
  last_pins_carried: true,
  fail_open: true,
  archive_deferred: true,
  overflow_recovered: true,
  backend_truncations: true,
  tokens_kept_out: true,
  passthrough_by_size: true,
  dry_run: true,
  keep_recent: true,
  memo_store: true,
  upstream_status: true,
  sessions_of: true,
  seal_status: true,
  seal_checked_at: true,
  sessions: true,
};

/** The same for `/readyz`, whose body the sidecar's health controller also declares as the client's type. */
const READY_KEYS: Record<keyof ReadyAnswer, true> = {
  status: true,
  version: true,
  span_volume: true,
  memo_store: true,
  redis: true,
  upstream: true,
};

const SESSION = 'client-spec-session';

/** Ten user turns of about 900 tokens: well over the 6,963-token budget of an 8,192 window, so it compacts. */
function overBudgetChat(): string {
  const words = ['ledger', 'replica', 'cursor', 'timeout', 'invoice', 'handler', 'rollback', 'tenant'];
  const messages = [{ role: 'system', content: 'You help with the client migration.' }];
  for (let turn = 1; turn <= 10; turn++) {
    const text = Array.from({ length: 380 }, (_, i) => words[(i * 7 + turn * 3) % words.length]).join(' ');
    messages.push({ role: 'user', content: `Step ${turn}.\n${text}` });
    if (turn < 10) messages.push({ role: 'assistant', content: `Checked step ${turn}.` });
  }
  return JSON.stringify({ model: 'stub-model', messages, max_tokens: 32 });
}

/** Starts `server` on a free loopback port and says which. */
async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function refusalOf(call: Promise<unknown>): Promise<{ code: string; status: number | undefined }> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof GuardianClientError))
    throw new Error(`expected a GuardianClientError, got ${String(err)}`);
  return { code: err.code, status: err.status };
}

describe('GuardianClient against a sidecar', () => {
  let stack: Stack;
  let client: GuardianClient;

  beforeAll(async () => {
    stack = await startStack({
      stub: { window: 8192 },
      env: { GUARDIAN_NUM_CTX: '8192', GUARDIAN_RESERVE_OUTPUT: '1024' },
    });
    client = new GuardianClient({ url: stack.guardian.url, timeoutMs: 30_000 });
    const res = await fetch(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-test',
        'x-guardian-session': SESSION,
      },
      body: overBudgetChat(),
    });
    await res.arrayBuffer();
    expect(res.status).toBe(200);
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('reads /readyz as an answer, ready or not, with exactly the keys of ReadyAnswer', async () => {
    const ready = await client.ready();
    expect(ready.status).toBe(200);
    expect(Object.keys(ready.body ?? {}).sort()).toEqual(Object.keys(READY_KEYS).sort());
    expect(ready.body).toMatchObject({ status: 'ready', version: 'test', memo_store: 'memory' });
  });

  it('reads /guardian/stats with exactly the keys of StatsAnswer, and the compaction counted', async () => {
    const stats = await client.stats();
    expect(Object.keys(stats).sort()).toEqual(Object.keys(STATS_KEYS).sort());
    expect(stats).toMatchObject({
      version: 'test',
      num_ctx: 8192,
      compactions_performed: 1,
      sessions_of: null,
      dry_run: false,
    });
    expect(typeof stats.passthrough_by_size).toBe('number');
    expect(stats.sessions).toEqual([expect.objectContaining({ model: 'stub-model', window: 8192 })]);
  });

  it('reads /guardian/usage of a session and of the latest, and refuses an unknown one with its code', async () => {
    const usage = await client.usage(SESSION);
    expect(usage).toMatchObject({ window: 8192, model: 'stub-model' });
    expect(usage.used_after_compaction).toBeLessThan(8192);
    expect(usage.last_compaction_at).not.toBeNull();
    expect(await client.usage()).toEqual(usage);
    expect(await refusalOf(client.usage('never-seen'))).toEqual({ code: 'GUARDIAN_NO_SESSION', status: 404 });
    expect(await refusalOf(client.usage(''))).toEqual({ code: 'GUARDIAN_BAD_SESSION', status: 400 });
  });

  it('reads /guardian/events with the compaction of that session', async () => {
    const [row] = (await client.stats()).sessions;
    const { events } = await client.events();
    expect(events.filter((e) => e.kind === 'compaction')).toEqual([
      expect.objectContaining({ route: 'chat', model: 'stub-model', session: row?.session }),
    ]);
  });

  it('posts a capture, and is told where the archive ends when it posts the same lines again', async () => {
    const lines = [{ type: 'user', message: { role: 'user', content: 'capture through the client' } }];
    const req = { session_hash: sha256Hex('client-spec-capture'), offset: 0, model: 'claude', lines };
    const first = await client.capture(req);
    expect(first).toMatchObject({ accepted: true, span: 1 });
    expect(await client.capture(req)).toEqual({
      accepted: false,
      run: null,
      span: null,
      archived_end: first.archived_end,
    });
    expect(await refusalOf(client.capture({ ...req, session_hash: 'not-a-hash' }))).toEqual({
      code: 'GUARDIAN_BAD_CAPTURE',
      status: 400,
    });
  });

  describe('a call that gets no usable answer', () => {
    const servers: { close(): unknown }[] = [];
    const sockets: Socket[] = [];
    afterAll(() => {
      for (const s of sockets) s.destroy();
      for (const s of servers) s.close();
    });

    // One case per code: the Record makes a new ClientErrorCode without a case a compile error.
    const cases: Record<ClientErrorCode, () => Promise<{ code: string; status: number | undefined }>> = {
      SIDECAR_BAD_URL: async () => {
        expect(() => new GuardianClient({ url: 'not a url', timeoutMs: 1000 })).toThrow(GuardianClientError);
        return refusalOf(
          Promise.resolve().then(() => new GuardianClient({ url: 'ftp://x', timeoutMs: 1000 })),
        );
      },
      SIDECAR_UNREACHABLE: async () => {
        const closed = createNetServer();
        const port = await listen(closed);
        await new Promise((resolve) => closed.close(resolve));
        return refusalOf(new GuardianClient({ url: `http://127.0.0.1:${port}`, timeoutMs: 30_000 }).stats());
      },
      // A server that takes the connection and never answers: the deadline is the only way out, however long.
      SIDECAR_TIMEOUT: async () => {
        const silent = createNetServer((socket) => sockets.push(socket));
        servers.push(silent);
        const port = await listen(silent);
        return refusalOf(new GuardianClient({ url: `http://127.0.0.1:${port}`, timeoutMs: 200 }).stats());
      },
      // The dashboard page is HTML, not JSON; and an answer past maxReplyBytes is refused whatever it is.
      SIDECAR_BAD_REPLY: async () => {
        expect(await refusalOf(client.getJson('guardian/health'))).toEqual({
          code: 'SIDECAR_BAD_REPLY',
          status: 200,
        });
        const small = new GuardianClient({ url: stack.guardian.url, timeoutMs: 30_000, maxReplyBytes: 64 });
        return refusalOf(small.stats());
      },
      // Something else on the port refusing without guardian's error body.
      SIDECAR_HTTP_STATUS: async () => {
        const other = createHttpServer((_req, res) => res.writeHead(502).end('bad gateway'));
        servers.push(other);
        const port = await listen(other);
        return refusalOf(new GuardianClient({ url: `http://127.0.0.1:${port}`, timeoutMs: 30_000 }).stats());
      },
    };
    const statuses: Record<ClientErrorCode, number | undefined> = {
      SIDECAR_BAD_URL: undefined,
      SIDECAR_UNREACHABLE: undefined,
      SIDECAR_TIMEOUT: undefined,
      SIDECAR_BAD_REPLY: 200,
      SIDECAR_HTTP_STATUS: 502,
    };

    it.each(Object.keys(cases) as ClientErrorCode[])('carries %s', async (code) => {
      expect(await cases[code]()).toEqual({ code, status: statuses[code] });
    });
  });
});
