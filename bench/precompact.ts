// `npm run bench -- precompact [--summary-delay-ms N] [--gap-ms N] [--turns N]`: background pre-compaction off vs on
// (issue 14). The stub's summariser answers after a delay (3 s, a real model's summary of a long stretch); a
// tool-calling session of 30 turns, 4 s apart (a person reading), at an 8,192 and a 32,768 window with the defaults.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

import { startStub, type RecordedRequest, type StubBackend } from '@guardian/stub-backend';
import { createLogger } from '@guardian/telemetry';

import { startGuardian } from '../apps/guardian/src/bootstrap';
import { GuardianConfig } from '../apps/guardian/src/config/guardian-config';
import { requestForTurn, TOOLS, type SessionShape } from './conversation';
import { percentile, writeResults } from './support';

const FENCE = '## Context Guardian: archived conversation';

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const v = i === -1 ? undefined : Number(process.argv[i + 1]);
  return v !== undefined && Number.isFinite(v) ? v : fallback;
}

interface Row {
  window: number;
  precompact: string;
  compacted: number;
  calls: number;
  background: number;
  waited: number;
  addedP50: number;
  addedP95: number;
  prefixChanges: number;
}

/** A turn of about a tenth of the budget: the session compacts for most of its 30 turns at either window. */
function shapeFor(window: number): SessionShape {
  const k = window / 8192;
  return { userChars: 260 * k, toolResultChars: 700 * k, answerChars: 220 * k, seed: window };
}

async function runSession(opts: {
  window: number;
  threshold: string;
  turns: number;
  gapMs: number;
  summaryDelayMs: number;
}): Promise<Row> {
  const stub: StubBackend = await startStub({
    window: opts.window,
    summaryDelayMs: opts.summaryDelayMs,
    maxRecorded: 100_000,
  });
  const dataDir = mkdtempSync(join(tmpdir(), 'cg-bench-precompact-'));
  const config = GuardianConfig.fromEnv(
    {
      GUARDIAN_UPSTREAM_URL: stub.baseUrl,
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_LOG_LEVEL: 'warn',
      GUARDIAN_PRECOMPACT_THRESHOLD: opts.threshold,
    },
    { version: 'bench', home: dataDir },
  );
  const guardian = await startGuardian(config, createLogger({ level: 'warn' }), { port: 0 });
  const shape = shapeFor(opts.window);
  const added: number[] = [];
  try {
    for (let t = 1; t <= opts.turns; t++) {
      const body = JSON.stringify({
        model: 'stub-model',
        messages: requestForTurn(t, shape),
        tools: TOOLS,
        max_tokens: 256,
      });
      const seen = stub.requests.length;
      const started = performance.now();
      const res = await fetch(`${guardian.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-guardian-session': `bench-${opts.window}` },
        body,
      });
      await res.arrayBuffer();
      const took = performance.now() - started;
      if (res.status !== 200) throw new Error(`turn ${t} answered ${res.status}`);
      const forwarded = stub.requests
        .slice(seen)
        .filter((r) => r.route === 'chat' && !r.isSummary)
        .at(-1);
      if (forwarded && forwarded.body.toString('utf8').includes(FENCE)) {
        // What the sidecar added: the client's wait less the stub's own time on the request it was sent.
        added.push(took - ((forwarded.answeredAt ?? started) - forwarded.receivedAt));
      }
      await sleep(opts.gapMs);
    }
    const stats = (await (await fetch(`${guardian.url}/guardian/stats`)).json()) as {
      summary_waits: number;
      precompact: { done: number };
    };
    const generations = stub.requests.filter((r) => r.route === 'chat' && !r.isSummary);
    const compacted = generations.filter((r) => r.body.toString('utf8').includes(FENCE));
    added.sort((a, b) => a - b);
    return {
      window: opts.window,
      precompact: opts.threshold === '0' ? 'off' : `on (${opts.threshold})`,
      compacted: compacted.length,
      calls: stub.requests.filter((r) => r.isSummary).length,
      background: stats.precompact.done,
      waited: stats.summary_waits,
      addedP50: percentile(added, 50),
      addedP95: percentile(added, 95),
      prefixChanges: prefixChanges(compacted),
    };
  } finally {
    await guardian.close(200);
    await stub.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** How often the system message (the client's prompt and guardian's block: all before the kept tail) changed. */
function prefixChanges(compacted: readonly RecordedRequest[]): number {
  let changes = 0;
  let previous: string | undefined;
  for (const r of compacted) {
    const first = (r.json as { messages: { content: unknown }[] }).messages[0];
    const prefix = JSON.stringify(first?.content);
    if (previous !== undefined && prefix !== previous) changes += 1;
    previous = prefix;
  }
  return changes;
}

export async function run(): Promise<void> {
  const turns = option('--turns', 30);
  const gapMs = option('--gap-ms', 4000);
  const summaryDelayMs = option('--summary-delay-ms', 3000);
  const rows: Row[] = [];
  for (const window of [8192, 32768]) {
    for (const threshold of ['0', '0.8']) {
      rows.push(await runSession({ window, threshold, turns, gapMs, summaryDelayMs }));
      const r = rows.at(-1)!;
      process.stdout.write(`  window ${window}, pre-compaction ${r.precompact}: done\n`);
    }
  }
  const lines = [
    `${turns}-turn tool-calling session, turns ${gapMs} ms apart, summariser answering after ${summaryDelayMs} ms, defaults otherwise`,
    'window  pre-compaction  compacted turns  summariser calls  in background  calls/compacted turn  requests that waited  added p50 / p95 on compacted turns  prefix changes',
    ...rows.map(
      (r) =>
        `${String(r.window).padStart(6)}  ${r.precompact.padEnd(14)}  ${String(r.compacted).padStart(15)}  ${String(r.calls).padStart(16)}  ${String(r.background).padStart(13)}  ${(r.calls / Math.max(1, r.compacted)).toFixed(2).padStart(20)}  ${String(r.waited).padStart(20)}  ${`${r.addedP50.toFixed(1)} / ${r.addedP95.toFixed(1)} ms`.padStart(34)}  ${String(r.prefixChanges).padStart(14)}`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  writeResults('precompact.txt', lines);
}
