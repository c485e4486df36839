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
import {
  baselineBuild,
  cpuSeconds,
  int,
  loadLine,
  ms,
  SIDECAR_MAIN,
  startSidecarChild,
  summarise,
  type ChildServer,
} from './support';

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

async function stats(url: string): Promise<Record<string, number>> {
  const res = await fetch(`${url}/guardian/stats`);
  return (await res.json()) as Record<string, number>;
}

/** One target of the memo-hit figure: a sidecar build, and whether it compacts (memo hits) or passes through. */
interface MemoTarget {
  name: string;
  child: ChildServer;
  pool: Pool;
  dataDir: string;
  hit: boolean;
}

async function startTarget(
  name: string,
  main: string,
  stub: StubBackend,
  window: number,
  hit: boolean,
): Promise<MemoTarget> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cg-bench-'));
  const child = await startSidecarChild({
    main,
    upstream: stub.baseUrl,
    dataDir,
    env: { GUARDIAN_NUM_CTX: String(window), GUARDIAN_LOG_LEVEL: 'info' },
  });
  return { name, child, pool: new Pool(child.url, { connections: 1 }), dataDir, hit };
}

async function stopTarget(t: MemoTarget): Promise<void> {
  await t.pool.close();
  await t.child.stop();
  rmSync(t.dataDir, { recursive: true, force: true });
}

/**
 * (b) Added latency of a memo-hit turn. Sidecar A (window below the request) compacts the request once; every repeat
 * is a memo hit (no summariser call). Sidecar B (window 1,000,000) passes the same request through. Each is compared
 * with the stub answering directly what that sidecar forwards, so the stub's own work on a smaller compacted body
 * does not flatter the memo hit: added = (A - direct(A's body)) - (B - direct(original)). Each sidecar is the built
 * main.js in a process of its own; with BENCH_BASELINE the baseline build's pair is measured in the same rounds.
 */
export async function memoHitBench(
  n: number,
  size: { label: string; turns: number; window: number },
): Promise<string[]> {
  const stub = await startStub({ window: 1_000_000, maxRecorded: 64 });
  const builds: [string, string][] = [['this build', SIDECAR_MAIN]];
  const baseline = baselineBuild();
  if (baseline) builds.push(['baseline', baseline]);
  const targets: MemoTarget[] = [];
  const body = chatRequest(size.turns, { userChars: 900, toolResultChars: 3200, answerChars: 700, seed: 11 });
  const stubPool = new Pool(stub.url, { connections: 1 });
  const path = '/v1/chat/completions';
  const lines: string[] = [];
  try {
    for (const [name, main] of builds) {
      targets.push(await startTarget(`${name} A`, main, stub, size.window, true));
      targets.push(await startTarget(`${name} B`, main, stub, 1_000_000, false));
    }
    // Warm-up: the one compaction (a summariser call, a span, a memo entry), window detection, calibration.
    for (const t of targets) for (let i = 0; i < 8; i += 1) await post(t.pool, path, body);
    const forwarded = new Map<string, string>();
    for (const t of targets.filter((x) => x.hit)) {
      stub.reset();
      await post(t.pool, path, body);
      const sent = stub.requests
        .filter((r) => r.route === 'chat' && !r.isSummary)
        .at(-1)
        ?.body.toString();
      if (!sent || sent.length >= body.length) throw new Error(`${t.name} did not compact the request`);
      forwarded.set(t.name, sent);
    }
    const before = new Map<string, Record<string, number>>();
    for (const t of targets) before.set(t.name, await stats(t.child.url));
    const samples = new Map<string, number[]>();
    const push = (k: string, v: number) => (samples.get(k) ?? samples.set(k, []).get(k)!).push(v);
    const warm = 30;
    lines.push(`(b) ${size.label}: started ${new Date().toISOString()}, ${loadLine()}`);
    // CPU time of each sidecar process over the timed requests (from /proc): what the other tenants' load does not
    // change, where the latencies wait in the run queue with them.
    const cpu = new Map<string, number>();
    for (let i = 0; i < n + warm; i += 1) {
      if (i === warm) for (const t of targets) cpu.set(t.name, -cpuSeconds(t.child.child.pid));
      for (const t of targets) {
        const own = await timed(t.pool, path, body);
        const direct = await timed(stubPool, path, forwarded.get(t.name) ?? body);
        if (i < warm) continue;
        push(t.name, own);
        push(`${t.name} direct`, direct);
      }
    }
    for (const t of targets) cpu.set(t.name, ((cpu.get(t.name) ?? 0) + cpuSeconds(t.child.child.pid)) / n);
    const s = (k: string) => summarise(samples.get(k) ?? []);
    lines.push(
      `-- (b) memo-hit turn vs pass-through, ${size.label}: ${int(body.length)}-byte request, compacted to ${int(forwarded.get('this build A')?.length ?? 0)} bytes (window ${int(size.window)}); ${n} interleaved requests per target, 1 connection each; ${loadLine()} at the end`,
    );
    for (const [name] of builds) {
      const a = s(`${name} A`);
      const aDirect = s(`${name} A direct`);
      const b = s(`${name} B`);
      const bDirect = s(`${name} B direct`);
      const added = (k: 'p50' | 'p99') => a[k] - aDirect[k] - (b[k] - bDirect[k]);
      const after = await stats(targets.find((t) => t.name === `${name} A`)!.child.url);
      const was = before.get(`${name} A`) ?? {};
      const reused = (after.summaries_reused ?? 0) - (was.summaries_reused ?? 0);
      lines.push(
        `${name}: A memo hit p50 ${ms(a.p50)} p99 ${ms(a.p99)} (direct with A's body p50 ${ms(aDirect.p50)}); B pass-through p50 ${ms(b.p50)} p99 ${ms(b.p99)} (direct p50 ${ms(bDirect.p50)})`,
        `${name}: memo hit adds over pass-through p50 ${ms(added('p50'))}, p99 ${ms(added('p99'))} (target <= 1 ms: ${added('p50') <= 1 ? 'met' : 'MISSED'} at p50); memo hits ${reused} of ${n + warm}`,
        `${name}: sidecar CPU per request, memo hit ${ms((cpu.get(`${name} A`) ?? 0) * 1000)}, pass-through ${ms((cpu.get(`${name} B`) ?? 0) * 1000)}: the memo hit adds ${ms(((cpu.get(`${name} A`) ?? 0) - (cpu.get(`${name} B`) ?? 0)) * 1000)}`,
      );
    }
    return lines;
  } finally {
    await stubPool.close();
    for (const t of targets) await stopTarget(t);
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
    const st = await stats(sidecar.guardian.url);
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
