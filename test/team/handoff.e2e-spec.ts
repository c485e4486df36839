import { chatAs, startTeamStack, type TeamStack } from './support';
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
});
