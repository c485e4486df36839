import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { parseVerifierKey, tilePath, verifyTlogProof } from '@guardian/archive';

import { chatAs, startTeamStack, TOKENS, type TeamStack } from '../team/support';
import { runChecker } from './go-checker';

// Issue 29 items 3 and 4: the sidecar serves its log as C2SP tlog-tiles lays it out, and every recall answer carries
// its entry and a tlog-proof bundle that verifies offline.
describe('the served span log', () => {
  let stack: TeamStack;
  let local: string;

  async function raw(
    path: string,
    who: keyof typeof TOKENS,
  ): Promise<{ status: number; bytes: Buffer; type: string }> {
    const res = await fetch(`${stack.guardian.url}${path}`, { headers: { 'x-guardian-token': TOKENS[who] } });
    return {
      status: res.status,
      bytes: Buffer.from(await res.arrayBuffer()),
      type: res.headers.get('content-type') ?? '',
    };
  }

  beforeAll(async () => {
    stack = await startTeamStack();
    local = mkdtempSync(join(tmpdir(), 'log-api-'));
    for (const [who, session, marker] of [
      ['alice', 'laptop', 'ZEBRA-7431'],
      ['bob', 'laptop', 'OKAPI-2210'],
    ] as const) {
      expect((await chatAs(stack, who, { session, tag: `${who}-${session}`, marker })).status).toBe(200);
    }
    await ownLogSize(2);
  });

  /** The checkpoint follows the commit behind the answer: waits until it covers `size` spans (no time decides this). */
  async function ownLogSize(size: number): Promise<void> {
    for (;;) {
      const logs = (await stack.get('/guardian/archive/logs', 'admin')).body.logs as {
        own: boolean;
        size: number;
      }[];
      if (logs.find((l) => l.own)?.size === size) return;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Fetches the served checkpoint and the tiles of a tree of `size` into a folder of their own, as an auditor would. */
  async function fetchLog(dir: string, size: number): Promise<void> {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'checkpoint'), (await raw('/guardian/archive/log/checkpoint', 'admin')).bytes);
    for (const rel of [tilePath(0, 0, size), tilePath('entries', 0, size)]) {
      const tile = await raw(`/guardian/archive/log/${rel}`, 'admin');
      expect([tile.status, tile.type]).toEqual([200, 'application/octet-stream']);
      mkdirSync(dirname(join(dir, rel)), { recursive: true });
      writeFileSync(join(dir, rel), tile.bytes);
    }
  }
  afterAll(async () => {
    await stack?.close();
    if (local !== undefined) rmSync(local, { recursive: true, force: true });
  });

  it('serves checkpoint, verifier key and tiles that Go’s sumdb packages accept', async () => {
    const vkey = (await raw('/guardian/archive/log/vkey', 'alice')).bytes.toString('utf8').trim();
    const cp = await raw('/guardian/archive/log/checkpoint', 'alice');
    expect(cp.type).toMatch(/^text\/plain/);
    await fetchLog(local, 2);
    expect(readFileSync(join(local, 'checkpoint')).equals(cp.bytes)).toBe(true);
    expect(runChecker(local, vkey)).toMatchObject({ ok: true });
    const listed = (await stack.get('/guardian/archive/logs', 'alice')).body.logs as {
      name: string;
      vkey: string;
    }[];
    const own = listed.find((l) => l.vkey === vkey)!;
    const byName = await raw(`/guardian/archive/logs/${own.name}/checkpoint`, 'alice');
    expect(byName.bytes.equals(cp.bytes)).toBe(true);
  });

  it('keeps entry bundles (every owner’s run names) to the admin, and refuses paths that are not log files', async () => {
    expect((await raw(`/guardian/archive/log/${tilePath('entries', 0, 2)}`, 'alice')).status).toBe(404);
    expect((await raw(`/guardian/archive/log/${tilePath(0, 0, 2)}`, 'alice')).status).toBe(200);
    expect((await raw('/guardian/archive/log/../../run.json', 'admin')).status).toBe(404);
    expect((await raw('/guardian/archive/log/tile/0/000.p/9', 'admin')).status).toBe(404);
    expect((await stack.get('/guardian/archive/log/checkpoint')).status).toBe(401);
  });

  it('gives every search hit and span read a log entry and a proof that verifies offline', async () => {
    const vkey = parseVerifierKey((await raw('/guardian/archive/log/vkey', 'bob')).bytes.toString('utf8'));
    const found = (await stack.get('/guardian/archive/search?term=OKAPI-2210', 'bob')).body;
    expect(found.hits.length).toBeGreaterThan(0);
    for (const hit of found.hits as { run: string; span: number; log_entry: string; log_proof: string }[]) {
      expect(hit.log_entry).toMatch(
        new RegExp(`^context-guardian span ${hit.run} ${hit.span} sha256:[0-9a-f]{64}$`),
      );
      expect(verifyTlogProof(hit.log_proof, hit.log_entry, vkey)).toMatchObject({ ok: true });
    }
    const first = found.hits[0] as { run: string; span: number; log_entry: string };
    const read = (await stack.get(`/guardian/archive/runs/${first.run}/spans/${first.span}`, 'bob')).body;
    expect(read.log_entry).toBe(first.log_entry);
    expect(verifyTlogProof(read.log_proof, read.log_entry, vkey)).toMatchObject({ ok: true });
    expect(verifyTlogProof(read.log_proof, `${read.log_entry}0`, vkey)).toMatchObject({ ok: false });
  });

  it('a later served checkpoint is consistent with an earlier one, as Go’s tlog.CheckTree proves through the served tiles', async () => {
    const vkey = (await raw('/guardian/archive/log/vkey', 'admin')).bytes.toString('utf8').trim();
    // The auditor's kept checkpoint: the one served now, kept outside the log's folder.
    const kept = join(local, 'kept-checkpoint');
    const listed = (await stack.get('/guardian/archive/logs', 'admin')).body.logs as {
      own: boolean;
      size: number;
    }[];
    const size = listed.find((l) => l.own)!.size;
    writeFileSync(kept, (await raw('/guardian/archive/log/checkpoint', 'admin')).bytes);
    for (const [who, marker] of [
      ['alice', 'IBEX-5120'],
      ['bob', 'TAPIR-8841'],
    ] as const) {
      expect((await chatAs(stack, who, { session: 'later', tag: `${who}-later`, marker })).status).toBe(200);
    }
    await ownLogSize(size + 2);
    const later = join(local, 'later');
    await fetchLog(later, size + 2);
    expect(runChecker(later, vkey, kept)).toEqual({
      ok: true,
      out: expect.stringMatching(
        new RegExp(` size ${size + 2} entries ${size + 2} consistent with ${size}$`),
      ),
    });
  });
});
