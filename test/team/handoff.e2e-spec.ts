import { sessionHash } from '@guardian/archive';
import { createLogger } from '@guardian/telemetry';

import { startGuardian, type RunningGuardian } from '../../apps/guardian/src/bootstrap';
import { GuardianConfig } from '../../apps/guardian/src/config/guardian-config';
import { WINDOW_ENV } from '../dashboard/support';
import { chatAs, startTeamStack, TOKENS, type TeamStack, type Who } from './support';
import { until } from '../support/wait';

// Issue 32 item 5 in team mode: a hand-off quotes what the user typed, so it is served under the archive's rules
// (ARCHITECTURE.md#access): a developer reads their own session's, the admin any owner's, and two developers who
// name their sessions alike never see each other's.

describe('the hand-off endpoint with two developers and an admin', () => {
  let stack: TeamStack;
  const path = '/guardian/sessions/laptop/handoff';

  beforeAll(async () => {
    stack = await startTeamStack();
    expect(
      (await chatAs(stack, 'alice', { session: 'laptop', tag: 'alice', marker: 'ZEBRA-7431' })).status,
    ).toBe(200);
    expect((await chatAs(stack, 'bob', { session: 'laptop', tag: 'bob', marker: 'OKAPI-2210' })).status).toBe(
      200,
    );
    // Recorded behind each answer: wait until both are there.
    await until('both hand-offs recorded', async () => {
      const [a, b] = await Promise.all([stack.get(path, 'alice'), stack.get(path, 'bob')]);
      return a.status === 200 && b.status === 200;
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it("answers each developer their own session's pins, under the same session name", async () => {
    const alice = await stack.get(path, 'alice');
    const bob = await stack.get(path, 'bob');
    expect(alice.body.pins).toEqual([{ text: 'Remember this: the tag is ZEBRA-7431.', status: 'current' }]);
    expect(bob.body.pins).toEqual([{ text: 'Remember this: the tag is OKAPI-2210.', status: 'current' }]);
    expect(bob.text).not.toContain('ZEBRA');
  });

  it('refuses no token and a wrong one, and a developer naming another owner', async () => {
    expect((await stack.get(path)).status).toBe(401);
    expect((await stack.get(path, 'tok-nobody')).status).toBe(403);
    const other = await stack.get(`${path}?owner=bob`, 'alice');
    expect([other.status, other.body.error?.code]).toEqual([400, 'GUARDIAN_BAD_OWNER']);
  });

  it("gives the admin any owner's with ?owner=, and a session nobody sent without a token is a 404", async () => {
    const admin = await stack.get(`${path}?owner=alice`, 'admin');
    expect(admin.body.pins).toEqual([{ text: 'Remember this: the tag is ZEBRA-7431.', status: 'current' }]);
    expect((await stack.get(path, 'admin')).status).toBe(404);
  });

  describe('after a restart, from the hand-off files on the volume', () => {
    let restarted: RunningGuardian;
    const get = async (path: string, who?: Who): Promise<{ status: number; body: Record<string, any> }> => {
      const headers: Record<string, string> = { accept: 'application/json' };
      if (who !== undefined) headers['x-guardian-token'] = TOKENS[who];
      const res = await fetch(`${restarted.url}${path}`, { headers });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };

    beforeAll(async () => {
      // Stopping flushes the queued hand-off writes; the new process has nothing in memory.
      await stack.stopGuardian();
      const config = GuardianConfig.fromEnv(
        {
          ...WINDOW_ENV,
          GUARDIAN_UPSTREAM_URL: stack.stub.baseUrl,
          GUARDIAN_DATA_DIR: stack.dataDir,
          GUARDIAN_TOKENS_FILE: stack.tokensFile,
          GUARDIAN_ADMIN_TOKEN: TOKENS.admin,
          GUARDIAN_LOG_LEVEL: 'silent',
          GUARDIAN_PRECOMPACT_THRESHOLD: '0',
          GUARDIAN_KEEPALIVE_MS: '0',
        },
        { version: 'test', home: stack.dataDir },
      );
      restarted = await startGuardian(config, createLogger({ level: 'silent' }), { port: 0 });
    });
    afterAll(async () => {
      await restarted?.close(200);
    });

    it("answers each developer their own session's hand-off, and nobody else's, by name or by hash", async () => {
      const alice = await get(path, 'alice');
      expect([alice.status, alice.body.pins]).toEqual([
        200,
        [{ text: 'Remember this: the tag is ZEBRA-7431.', status: 'current' }],
      ]);
      expect((await get(path, 'bob')).body.pins).toEqual([
        { text: 'Remember this: the tag is OKAPI-2210.', status: 'current' },
      ]);
      const aliceHash = sessionHash('laptop', 'alice');
      expect((await get(`/guardian/sessions/${aliceHash}/handoff`, 'alice')).body).toEqual(alice.body);
      // Bob naming alice's session by its hash reads a run his token did not write: answered like a missing one.
      expect((await get(`/guardian/sessions/${aliceHash}/handoff`, 'bob')).status).toBe(404);
      expect((await get(`${path}?owner=alice`, 'admin')).body).toEqual(alice.body);
      expect((await get(path)).status).toBe(401);
    });
  });
});
