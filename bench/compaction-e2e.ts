// The compaction benchmarks that go through a real sidecar (started in-process, as the e2e tests do) in front of
// the stub: (b) what a memo-hit turn adds over a pass-through turn; (c) memo on vs off on a 20-turn replay.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { sortedKeyJson, hashText } from '@guardian/compaction';
import { startStub, type StubBackend } from '@guardian/stub-backend';
import { createLogger } from '@guardian/telemetry';
import { Pool } from 'undici';

import { startGuardian, type RunningGuardian } from '../apps/guardian/src/bootstrap';
import { GuardianConfig } from '../apps/guardian/src/config/guardian-config';
import { chatRequest, requestForTurn, TOOLS, type SessionShape } from './conversation';
import { int, ms, summarise } from './support';

const HEADERS = { 'content-type': 'application/json', 'x-guardian-session': 'bench-session' };

interface Sidecar {
  guardian: RunningGuardian;
  dataDir: string;
  close(): Promise<void>;
}

async function startSidecar(stub: StubBackend, env: Record<string, string>): Promise<Sidecar> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cg-bench-'));
  const config = GuardianConfig.fromEnv(
    { GUARDIAN_UPSTREAM_URL: stub.baseUrl, GUARDIAN_DATA_DIR: dataDir, GUARDIAN_LOG_LEVEL: 'warn', ...env },
    { version: 'bench', home: dataDir },
  );
  const guardian = await startGuardian(config, createLogger({ level: 'warn' }), { port: 0 });
  return {
    guardian,
    dataDir,
    async close() {
      await guardian.close(200);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function post(pool: Pool, path: string, body: string): Promise<number> {
  const res = await pool.request({ path, method: 'POST', headers: HEADERS, body });
  await res.body.arrayBuffer();
  return res.statusCode;
}

async function timed(pool: Pool, path: string, body: string): Promise<number> {
  const start = performance.now();
  const status = await post(pool, path, body);
  if (status !== 200) throw new Error(`benchmark request answered ${status}`);
  return performance.now() - start;
}

async function stats(s: Sidecar): Promise<Record<string, number>> {
  const res = await fetch(`${s.guardian.url}/guardian/stats`);
  return (await res.json()) as Record<string, number>;
}

/**
 * (b) Added latency of a memo-hit turn. Sidecar A (window 32768) compacts a ~40k-token request; every repeat is a
 * memo hit (no summariser call). Sidecar B (window 1,000,000) passes the same request through. Each is compared
 * with the stub answering directly what that sidecar forwards, so the stub's own work on a smaller compacted body
 * does not flatter the memo hit: added = (A - direct(A's body)) - (B - direct(original)).
 */
export async function memoHitBench(n: number): Promise<string[]> {
  const stub = await startStub({ window: 1_000_000, maxRecorded: 64 });
  const hit = await startSidecar(stub, { GUARDIAN_NUM_CTX: '32768' });
  const pass = await startSidecar(stub, { GUARDIAN_NUM_CTX: '1000000' });
  const body = chatRequest(28, { userChars: 900, toolResultChars: 3200, answerChars: 700, seed: 5 });
  const pools = [hit.guardian.url, pass.guardian.url, stub.url].map((u) => new Pool(u, { connections: 1 }));
  const [hitPool, passPool, stubPool] = pools as [Pool, Pool, Pool];
  const path = '/v1/chat/completions';
  try {
    await post(hitPool, path, body); // the one compaction: a summariser call, a span, a memo entry
    await post(hitPool, path, body);
    const forwarded = stub.requests
      .filter((r) => r.route === 'chat' && !r.isSummary)
      .at(-1)
      ?.body.toString();
    if (!forwarded || forwarded.length >= body.length)
      throw new Error('sidecar A did not compact the request');
    const before = await stats(hit);
    const samples = {
      hit: [] as number[],
      hitDirect: [] as number[],
      pass: [] as number[],
      direct: [] as number[],
    };
    const warm = 30;
    for (let i = 0; i < n + warm; i += 1) {
      const row = [
        await timed(hitPool, path, body),
        await timed(stubPool, path, forwarded),
        await timed(passPool, path, body),
        await timed(stubPool, path, body),
      ];
      if (i < warm) continue;
      samples.hit.push(row[0]!);
      samples.hitDirect.push(row[1]!);
      samples.pass.push(row[2]!);
      samples.direct.push(row[3]!);
    }
    const after = await stats(hit);
    const s = {
      hit: summarise(samples.hit),
      hitDirect: summarise(samples.hitDirect),
      pass: summarise(samples.pass),
      direct: summarise(samples.direct),
    };
    const added = (k: 'p50' | 'p99') => s.hit[k] - s.hitDirect[k] - (s.pass[k] - s.direct[k]);
    const reused = (after.summaries_reused ?? 0) - (before.summaries_reused ?? 0);
    const newCompactions = (after.compactions_performed ?? 0) - (before.compactions_performed ?? 0) - reused;
    return [
      `-- (b) memo-hit turn vs pass-through, ${int(body.length)}-byte request (~40k tokens), compacted to ${int(forwarded.length)} bytes; ${n} interleaved requests per target, 1 connection each`,
      `A memo hit through the sidecar  p50 ${ms(s.hit.p50)}  p99 ${ms(s.hit.p99)}  (stub direct with A's body: p50 ${ms(s.hitDirect.p50)}, p99 ${ms(s.hitDirect.p99)})`,
      `B pass-through, same request     p50 ${ms(s.pass.p50)}  p99 ${ms(s.pass.p99)}  (stub direct with the original: p50 ${ms(s.direct.p50)}, p99 ${ms(s.direct.p99)})`,
      `memo hit adds over pass-through: p50 ${ms(added('p50'))}, p99 ${ms(added('p99'))} (target <= 2 ms: ${added('p50') <= 2 ? 'met' : 'MISSED'} at p50)`,
      `memo hits counted by A: ${reused} of ${n + warm} timed requests; new compactions during the run: ${newCompactions}`,
    ];
  } finally {
    for (const p of pools) await p.close();
    await hit.close();
    await pass.close();
    await stub.close();
  }
}

interface ReplayFigures {
  answered: number;
  summariserCalls: number;
  summariserChars: number;
  spans: number;
  archived: number;
  duplicated: number;
  compactions: number;
  reused: number;
}

/** Archived messages, counted over every span file: copies, and copies beyond the first of each distinct message. */
function archiveCounts(spanDir: string): { spans: number; archived: number; duplicated: number } {
  const seen = new Map<string, number>();
  let spans = 0;
  for (const run of readdirSync(spanDir, { withFileTypes: true })) {
    if (!run.isDirectory()) continue;
    for (const file of readdirSync(join(spanDir, run.name))) {
      if (!/^\d+\.json$/.test(file)) continue;
      const span = JSON.parse(readFileSync(join(spanDir, run.name, file), 'utf8')) as {
        messages?: unknown[];
      };
      spans += 1;
      for (const m of span.messages ?? []) {
        const key = hashText(sortedKeyJson(m));
        seen.set(key, (seen.get(key) ?? 0) + 1);
      }
    }
  }
  const archived = [...seen.values()].reduce((a, b) => a + b, 0);
  return { spans, archived, duplicated: archived - seen.size };
}

async function replay(memo: '1' | '0', turns: number, shape: SessionShape): Promise<ReplayFigures> {
  const stub = await startStub({ window: 32_768 });
  const sidecar = await startSidecar(stub, { GUARDIAN_SUMMARY_MEMO: memo });
  const pool = new Pool(sidecar.guardian.url, { connections: 1 });
  try {
    let answered = 0;
    for (let t = 1; t <= turns; t += 1) {
      const body = JSON.stringify({
        model: 'stub-model',
        messages: requestForTurn(t, shape),
        tools: TOOLS,
        max_tokens: 256,
      });
      if ((await post(pool, '/v1/chat/completions', body)) === 200) answered += 1;
    }
    const summaries = stub.requests.filter((r) => r.isSummary);
    const st = await stats(sidecar);
    return {
      answered,
      summariserCalls: summaries.length,
      summariserChars: summaries.reduce((n, r) => n + r.body.length, 0),
      ...archiveCounts(join(sidecar.dataDir, 'spans')),
      compactions: st.compactions_performed ?? 0,
      reused: st.summaries_reused ?? 0,
    };
  } finally {
    await pool.close();
    await sidecar.close();
    await stub.close();
  }
}

/** (c) The same 20-turn session replayed through a fresh sidecar with the memo on, then off. */
export async function replayBench(): Promise<string[]> {
  const turns = 20;
  const shape: SessionShape = { userChars: 1200, toolResultChars: 7000, answerChars: 1500, seed: 23 };
  const on = await replay('1', turns, shape);
  const off = await replay('0', turns, shape);
  const line = (name: string, f: ReplayFigures) =>
    `${name.padEnd(9)} answered ${f.answered}/${turns}  summariser calls ${f.summariserCalls}  summariser input ${int(f.summariserChars)} chars  compactions ${f.compactions} (${f.reused} reused)  spans ${f.spans}  archived messages ${f.archived}  duplicated ${f.duplicated}`;
  return [
    `-- (c) memo on vs off: ${turns}-turn replay with tool calls (~10k chars a turn) through the sidecar, stub window 32768 (detected), default settings`,
    line('memo on', on),
    line('memo off', off),
    `summariser input: ${int(off.summariserChars)} -> ${int(on.summariserChars)} chars (seed: 623,572 -> 69,566); duplicated archived messages: ${off.duplicated} -> ${on.duplicated} (seed: 494 -> 0)`,
  ];
}
