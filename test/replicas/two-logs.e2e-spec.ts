// Issue 29 item 6: several replicas on one span volume each write their own transparency log; no two writers append
// to one. Two sidecar processes share one data folder (no Redis: each summarises its own sessions).
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { listLogs, logFolder, readLogFile, verifyArchive, verifyLogs } from '@guardian/archive';
import { startStub, type StubBackend } from '@guardian/stub-backend';

import { runChecker } from '../archive/go-checker';
import { verifyLogsIndependently } from '../archive/independent-log-verifier';
import { Conversation } from './conversation';
import { assertBuilt, startReplica, type Replica } from './replica-process';

const TURNS = 12;

/** The span files of every run a replica wrote, as `<run> <span>`, read from the runs' own run.json. */
function spansOf(spanDir: string, replica: string): string[] {
  const out: string[] = [];
  for (const run of readdirSync(spanDir).filter((n) => !n.startsWith('.'))) {
    const info = JSON.parse(readFileSync(join(spanDir, run, 'run.json'), 'utf8')) as { replica: string };
    if (info.replica !== replica) continue;
    for (const f of readdirSync(join(spanDir, run))) {
      const m = /^(\d{4,})\.json$/.exec(f);
      if (m !== null) out.push(`${run} ${Number(m[1])}`);
    }
  }
  return out.sort();
}

/** The entries of a log as `<run> <span>` (the entry bundle of a small log is one partial tile). */
function entriesOf(spanDir: string, log: string): string[] {
  const dir = logFolder(spanDir, log);
  const size = Number(readFileSync(join(dir, 'checkpoint'), 'utf8').split('\n')[1]);
  const bundle = readFileSync(join(dir, 'tile', 'entries', size === 256 ? '000' : `000.p/${size}`));
  const out: string[] = [];
  for (let at = 0; at < bundle.length; at += 2 + bundle.readUInt16BE(at)) {
    const text = bundle.subarray(at + 2, at + 2 + bundle.readUInt16BE(at)).toString('utf8');
    out.push(text.split(' ').slice(2, 4).join(' '));
  }
  return out.sort();
}

describe('two replicas on one span volume', () => {
  let stub: StubBackend;
  let dataDir: string;
  let replicas: Replica[] = [];

  beforeAll(async () => {
    assertBuilt();
    stub = await startStub({ window: 8192 });
    dataDir = await mkdtemp(join(tmpdir(), 'cg-two-logs-'));
    const env = {
      GUARDIAN_UPSTREAM_URL: stub.baseUrl,
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_RESERVE_OUTPUT: '1024',
      GUARDIAN_KEEP_RECENT_FRACTION: '0.5',
      GUARDIAN_LOG_ORIGIN: 'two-logs.test',
      GUARDIAN_SHUTDOWN_DRAIN_SECONDS: '0',
    };
    replicas = await Promise.all([startReplica({ env }), startReplica({ env })]);
    const [a, b] = replicas as [Replica, Replica];
    const talks = [
      { replica: a, conversation: new Conversation({ session: 'dev/a', wordsPerTurn: 330 }) },
      { replica: b, conversation: new Conversation({ session: 'dev/b', wordsPerTurn: 330 }) },
    ];
    // Both replicas write at once, turn by turn, into the same span folder.
    for (let turn = 0; turn < TURNS; turn++) {
      const statuses = await Promise.all(talks.map((t) => t.conversation.send(t.replica.url)));
      expect(statuses).toEqual([200, 200]);
    }
    // SIGTERM waits for each replica's last checkpoint (shutdown settles the log), so the logs are complete now.
    await Promise.all(replicas.map((r) => r.stop()));
  });

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await stub?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('gives each replica its own log, holding exactly the spans of its own runs', async () => {
    const spanDir = join(dataDir, 'spans');
    const logs = await listLogs(spanDir);
    expect(logs).toHaveLength(2);
    const writers = new Set(
      readdirSync(spanDir)
        .filter((n) => !n.startsWith('.'))
        .map(
          (run) =>
            (JSON.parse(readFileSync(join(spanDir, run, 'run.json'), 'utf8')) as { replica: string }).replica,
        ),
    );
    // Each log is named by its writer's replica tag; the two replicas are two writers.
    expect([...writers].sort()).toEqual(logs);
    for (const log of logs) {
      const spans = spansOf(spanDir, log);
      expect(spans.length).toBeGreaterThan(0);
      expect(entriesOf(spanDir, log)).toEqual(spans);
      const vkey = (await readLogFile(logFolder(spanDir, log), 'vkey'))!.toString('utf8').trim();
      expect(vkey.startsWith(`two-logs.test/${log}+`)).toBe(true);
      const size = spans.length;
      expect(runChecker(logFolder(spanDir, log), vkey)).toEqual({
        ok: true,
        out: `ok two-logs.test/${log} size ${size} entries ${size}`,
      });
    }
  });

  it('verifies: every run, each log, and the independent log verifier agree', async () => {
    const spanDir = join(dataDir, 'spans');
    expect((await verifyArchive({ spanDir })).ok).toBe(true);
    const logs = await verifyLogs({ spanDir, verifiedDir: join(dataDir, 'verified') });
    expect(logs.logs.map((l) => l.status)).toEqual(['ok', 'ok']);
    expect((await verifyLogsIndependently(spanDir)).logs.map((l) => l.status)).toEqual(['OK', 'OK']);
  });
});
