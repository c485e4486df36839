import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { sha256Hex } from '@guardian/archive';

import { startStack, type Stack } from '../../../test/support/stack';
import { GuardianClient, GuardianClientError } from './guardian-client';
import { RemoteArchive } from './remote-archive';

// The client in team mode (docs/team.md) against a real sidecar: each developer's token reads their own runs through
// RemoteArchive, the admin's every run, and a missing or wrong token is refused with guardian's own code.

const TOKENS = {
  alice: 'tok-alice-c1e5a7d30b',
  bob: 'tok-bob-94d0b2e61f',
  admin: 'adm-client-3f81e6a4c9',
} as const;
type Who = keyof typeof TOKENS;

async function refusalOf(call: Promise<unknown>): Promise<{ code: string; status: number | undefined }> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof GuardianClientError))
    throw new Error(`expected a GuardianClientError, got ${String(err)}`);
  return { code: err.code, status: err.status };
}

describe('RemoteArchive and GuardianClient with team tokens', () => {
  let stack: Stack;
  let dir: string;
  const runOf: Partial<Record<'alice' | 'bob', string>> = {};
  const clientOf = (token?: string) =>
    new GuardianClient({ url: stack.guardian.url, token, timeoutMs: 30_000 });
  const as = (who: Who) => clientOf(TOKENS[who]);
  const archiveOf = (who: Who) => new RemoteArchive(as(who));

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cg-client-'));
    const tokensFile = join(dir, 'tokens');
    await writeFile(tokensFile, `${TOKENS.alice} alice\n${TOKENS.bob} bob\n`);
    stack = await startStack({
      env: { GUARDIAN_TOKENS_FILE: tokensFile, GUARDIAN_ADMIN_TOKEN: TOKENS.admin },
    });
    // Both post under the same hook session hash: each lands in a run of their own.
    const session_hash = sha256Hex('client-team-session');
    for (const [who, text] of [
      ['alice', 'the deploy key ZEBRA-7431 is in vault'],
      ['bob', 'bob keeps OKAPI-2210 to himself'],
    ] as const) {
      const lines = [{ type: 'user', message: { role: 'user', content: text } }];
      const answer = await as(who).capture({ session_hash, offset: 0, model: 'claude', lines });
      expect(answer).toMatchObject({ accepted: true, span: 1 });
      runOf[who] = answer.run ?? undefined;
    }
    expect(runOf.alice).not.toEqual(runOf.bob);
  });
  afterAll(async () => {
    await stack?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['no token', undefined, { code: 'GUARDIAN_TOKEN_REQUIRED', status: 401 }],
    ['a wrong token', `${TOKENS.bob}0`, { code: 'GUARDIAN_TOKEN_INVALID', status: 403 }],
  ])('refuses every call with %s, with the code guardian answered', async (_name, token, refusal) => {
    const client = clientOf(token);
    const archive = new RemoteArchive(client);
    for (const call of [
      client.stats(),
      client.usage(),
      client.events(),
      archive.runs(),
      archive.search({ term: 'ZEBRA-7431' }),
      archive.heads(),
    ])
      expect(await refusalOf(call)).toEqual(refusal);
  });

  it('answers stats and events per viewer: a developer’s own sessions, the admin’s everyone’s', async () => {
    expect((await as('alice').stats()).sessions_of).toBe('alice');
    expect((await as('admin').stats()).sessions_of).toBeNull();
    expect(await as('bob').events()).toEqual({ events: [] });
    // No request went through the proxy as alice: no usage to read.
    expect(await refusalOf(as('alice').usage())).toEqual({ code: 'GUARDIAN_NO_SESSION', status: 404 });
  });

  it('lists and reads a developer’s own runs, and every run for the admin', async () => {
    const alice = archiveOf('alice');
    expect((await alice.runs()).runs.map((r) => r.run)).toEqual([runOf.alice]);
    expect((await archiveOf('admin').runs()).runs.map((r) => r.run).sort()).toEqual(
      [runOf.alice, runOf.bob].sort(),
    );
    const run = runOf.alice ?? '';
    expect(await alice.spans(run)).toEqual({
      run,
      spans: [expect.objectContaining({ run, span: 1 })],
      next: null,
    });
    const read = await alice.readSpan({ run, index: 1 });
    expect([read.run, read.span, read.text]).toEqual([run, 1, expect.stringContaining('ZEBRA-7431')]);
    // Bob's token cannot tell alice's run from one that does not exist.
    expect(await refusalOf(archiveOf('bob').spans(run))).toEqual({ code: 'ARCHIVE_NOT_FOUND', status: 404 });
    expect(await refusalOf(archiveOf('bob').readSpan({ run, index: 1 }))).toEqual({
      code: 'ARCHIVE_NOT_FOUND',
      status: 404,
    });
  });

  it('searches, digests, seals and lists heads within the caller’s runs only', async () => {
    const alice = archiveOf('alice');
    const found = await alice.search({ term: 'ZEBRA-7431' });
    expect(found.hits.map((h) => h.run)).toEqual([runOf.alice]);
    expect(found.complete).toBe(true);
    expect((await archiveOf('bob').search({ term: 'ZEBRA-7431' })).hits).toEqual([]);
    const digests = await alice.digests({});
    expect(digests.entries.map((e) => e.run)).toEqual([runOf.alice]);
    const seal = await alice.seal({});
    expect([seal.ok, seal.runs.map((r) => r.run), seal.next]).toEqual([true, [runOf.alice], null]);
    expect((await alice.heads()).map((h) => h.run)).toEqual([runOf.alice]);
    expect((await archiveOf('admin').heads()).map((h) => h.run).sort()).toEqual(
      [runOf.alice, runOf.bob].sort(),
    );
  });

  it('sums receipts and savings, and refuses a bad window with the archive’s code', async () => {
    const alice = archiveOf('alice');
    const receipts = await alice.receipts({ since: '1d' });
    expect(receipts).toMatchObject({ window: '1d', runs: 1, runs_broken: 0 });
    expect(await alice.savings({ since: '1d' })).toMatchObject({ window: '1d', compactions: 0 });
    expect(await refusalOf(alice.receipts({ since: 'yesterday' }))).toEqual({
      code: 'ARCHIVE_BAD_AGE',
      status: 400,
    });
  });
});
