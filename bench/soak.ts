// `npm run bench -- soak`: load and memory (issue 12, suite part 4). The built sidecar in front of the stub, both
// in processes of their own: 200 concurrent sessions x 30 turns that compact (the three routes, streamed and not),
// then 60 s of mixed traffic (sessions going on, new ones, 1 MB pastes, forwarded paths, guardian's own endpoints,
// live event streams). Printed: every request answered or not, RSS at start / peak / end (the idle sidecar is the
// baseline), each phase's own RSS peak with where that memory was (mapped files, malloc's [heap], anonymous) and the
// sidecar's CPU per request, the event-loop delay p99 per 2-s window (idle baseline, then under load), then the
// big-paste memory figures (bench/paste-memory.ts). Bounded: each phase has a fixed size or duration, each request a
// 120-s timeout. BENCH_SOAK_ENV / BENCH_SOAK_BASELINE_ENV (`A=1 B=2`) add variables to one build's environment, so an
// allocator or V8 setting (MALLOC_ARENA_MAX, LD_PRELOAD, NODE_OPTIONS) is measured beside the plain build in one run.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as pasteMemory from './paste-memory';
import { summariseProfile } from './profile';
import {
  mb,
  memoryMapLine,
  PATHS,
  ROUTES,
  RssSampler,
  scrapeMany,
  send,
  startSidecar,
  startStubChild,
  turnBody,
  type Route,
  type Sidecar,
} from './soak-support';
import {
  baselineBuild,
  cpuSeconds,
  envNumber,
  filler,
  int,
  machineLine,
  percentile,
  SIDECAR_MAIN,
  writeResults,
} from './support';

const SESSIONS = envNumber('BENCH_SOAK_SESSIONS', 200);
const TURNS = envNumber('BENCH_SOAK_TURNS', 30);
const MIXED_SECONDS = envNumber('BENCH_SOAK_SECONDS', 60);
const MIXED_WORKERS = 40;

class Tally {
  readonly statuses = new Map<string, number>();
  sent = 0;

  add(status: string): void {
    this.sent += 1;
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
  }

  get answered(): number {
    return [...this.statuses].filter(([s]) => /^[1-5]\d\d$/.test(s)).reduce((n, [, v]) => n + v, 0);
  }

  line(name: string): string {
    const parts = [...this.statuses].map(([s, n]) => `${s} x${int(n)}`).join(', ');
    return `${name}: ${int(this.sent)} sent, ${int(this.answered)} answered (${parts})`;
  }
}

const LAG = 'guardian_nodejs_eventloop_lag_p99_seconds';
/** Where the sidecar's memory is (prom-client's process and Node metrics): RSS, V8's heap, Buffers outside it. */
const MEMORY = [
  'guardian_process_resident_memory_bytes',
  'guardian_nodejs_heap_size_used_bytes',
  'guardian_nodejs_heap_size_total_bytes',
  'guardian_nodejs_external_memory_bytes',
] as const;

interface Samples {
  lag: number[];
  memory: Map<string, number>[];
}

/** Scrapes the sidecar's event-loop p99 and memory every 2 s (prom-client resets its histogram on each scrape). */
function loopSampler(url: string): { stop(): Promise<Samples> } {
  const samples: Samples = { lag: [], memory: [] };
  let running = true;
  const loop = (async () => {
    while (running) {
      await new Promise((r) => setTimeout(r, 2000));
      const got = await scrapeMany(url, [LAG, ...MEMORY]).catch(() => undefined);
      const v = got?.get(LAG);
      if (v !== undefined && Number.isFinite(v)) samples.lag.push(v * 1000);
      if (got) samples.memory.push(got);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return samples;
    },
  };
}

/** Where memory was at the scrape with the highest RSS, and at the last one. */
function memoryLines(memory: Map<string, number>[]): string[] {
  if (memory.length === 0) return [];
  const rssOf = (m: Map<string, number>) => m.get(MEMORY[0]) ?? 0;
  const peak = memory.reduce((a, b) => (rssOf(b) > rssOf(a) ? b : a));
  const line = (name: string, m: Map<string, number>) =>
    `${name}: RSS ${mb(rssOf(m))}, V8 heap used ${mb(m.get(MEMORY[1]) ?? Number.NaN)} of ${mb(m.get(MEMORY[2]) ?? Number.NaN)} reserved, Buffers and other memory outside the heap ${mb(m.get(MEMORY[3]) ?? Number.NaN)}`;
  return [line('memory at the highest RSS scraped', peak), line('memory at the last scrape', memory.at(-1)!)];
}

function loopLine(name: string, windows: number[]): string {
  const sorted = [...windows].sort((a, b) => a - b);
  return `${name}: event-loop delay p99 per 2-s window, median ${percentile(sorted, 50).toFixed(1)} ms, worst ${(sorted.at(-1) ?? Number.NaN).toFixed(1)} ms (${sorted.length} windows)`;
}

/** Holds a live /guardian/events stream open, as a dashboard does. */
function liveStream(url: string): () => void {
  const req = httpRequest(`${url}/guardian/events`, { headers: { accept: 'text/event-stream' } }, (res) =>
    res.resume(),
  );
  req.on('error', () => undefined);
  req.end();
  return () => req.destroy();
}

async function sessions(sidecar: Sidecar, tally: Tally): Promise<void> {
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, s) => {
      const route = ROUTES[s % 3] as Route;
      for (let n = 1; n <= TURNS; n++) {
        const body = JSON.stringify(turnBody(route, s, n, s % 2 === 1));
        tally.add(await send(sidecar.url, PATHS[route], body, { 'x-guardian-session': `soak-${s}` }));
      }
    }),
  );
}

async function mixed(sidecar: Sidecar, tally: Tally): Promise<void> {
  const until = Date.now() + MIXED_SECONDS * 1000;
  const paste = `Here is the log:\n${filler(1024 * 1024, 99)}`;
  let fresh = 10_000;
  const turns = new Map<number, number>();
  await Promise.all(
    Array.from({ length: MIXED_WORKERS }, async (_, w) => {
      for (let i = 0; Date.now() < until; i++) {
        const pick = (w * 7 + i * 13) % 20;
        if (pick < 10) {
          // An existing session goes on (its history keeps growing past the 30 turns).
          const s = (w * 31 + i) % SESSIONS;
          const n = (turns.get(s) ?? TURNS) + 1;
          turns.set(s, n);
          const route = ROUTES[s % 3] as Route;
          const body = JSON.stringify(turnBody(route, s, Math.min(n, 60), i % 2 === 0));
          tally.add(await send(sidecar.url, PATHS[route], body, { 'x-guardian-session': `soak-${s}` }));
        } else if (pick < 13) {
          const s = (fresh += 1);
          const route = ROUTES[s % 3] as Route;
          tally.add(
            await send(sidecar.url, PATHS[route], JSON.stringify(turnBody(route, s, 1 + (i % 4), false))),
          );
        } else if (pick < 14) {
          const body = JSON.stringify({ model: 'stub-model', messages: [{ role: 'user', content: paste }] });
          tally.add(await send(sidecar.url, PATHS.chat, body));
        } else if (pick < 16) {
          tally.add(await send(sidecar.url, '/v1/models', '', {}, 'GET'));
        } else {
          const path = ['/guardian/stats', '/metrics', '/readyz', '/guardian/events'][i % 4]!;
          tally.add(await send(sidecar.url, path, '', {}, 'GET'));
        }
      }
    }),
  );
}

/** What a phase cost: its RSS peak (and where that memory was), the sidecar's CPU per request. */
function phaseLine(name: string, rss: RssSampler, cpu: number, requests: number): string {
  return (
    `${name}: RSS peak ${mb(rss.peak)} (${memoryMapLine(rss.atPeak)}), ` +
    `sidecar CPU ${cpu.toFixed(1)} s, ${((cpu * 1000) / requests).toFixed(2)} ms per request`
  );
}

/** The two phases against one build of the sidecar; its lines go to `out`. */
async function soakOnce(
  name: string,
  main: string,
  env: Record<string, string>,
  out: (line: string) => void,
): Promise<void> {
  const stub = await startStubChild(8192);
  // BENCH_PROFILE=1: where the sidecar's CPU went during the soak (what holds the event loop).
  const profileDir =
    process.env.BENCH_PROFILE === '1' ? mkdtempSync(join(tmpdir(), 'cg-soak-prof-')) : undefined;
  const nodeArgs = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  const sidecar = await startSidecar(stub.url, { GUARDIAN_RESERVE_OUTPUT: '1024', ...env }, nodeArgs, main);
  const added = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  out(`-- ${name}${added.length > 0 ? ` (${added.join(' ')})` : ''}`);
  try {
    const rss = new RssSampler(sidecar.pid, 200);
    const idleLoop = loopSampler(sidecar.url);
    await new Promise((r) => setTimeout(r, 6000));
    const idle = await idleLoop.stop();
    out(
      `sidecar pid ${sidecar.pid}; stub window 8,192 tokens; ${SESSIONS} sessions x ${TURNS} turns, then ${MIXED_SECONDS} s mixed`,
    );
    out(loopLine('idle (baseline)', idle.lag));

    const streams = [liveStream(sidecar.url), liveStream(sidecar.url)];
    const loadLoop = loopSampler(sidecar.url);
    const t0 = Date.now();
    const phase1 = new Tally();
    // Each phase has a sampler of its own, so the mixed phase's peak is not the sessions phase's burst.
    const rss1 = new RssSampler(sidecar.pid, 200, true);
    const cpu0 = cpuSeconds(sidecar.pid);
    await sessions(sidecar, phase1);
    rss1.stop();
    const cpu1 = cpuSeconds(sidecar.pid);
    out(`${phase1.line('sessions phase')} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    out(phaseLine('  sessions phase', rss1, cpu1 - cpu0, phase1.sent));
    const phase2 = new Tally();
    const rss2 = new RssSampler(sidecar.pid, 200, true);
    await mixed(sidecar, phase2);
    rss2.stop();
    out(phase2.line(`mixed phase (${MIXED_SECONDS} s, ${MIXED_WORKERS} workers)`));
    out(phaseLine('  mixed phase', rss2, cpuSeconds(sidecar.pid) - cpu1, phase2.sent));
    const load = await loadLoop.stop();
    for (const stop of streams) stop();
    await new Promise((r) => setTimeout(r, 5000));
    rss.stop();
    const stats = (await (await fetch(`${sidecar.url}/guardian/stats`)).json()) as Record<string, unknown>;
    out(loopLine('under load', load.lag));
    out(
      `RSS: start ${mb(rss.start)} (idle baseline), peak over the whole run ${mb(rss.peak)}, end ${mb(rss.last)} (5 s after the load)`,
    );
    for (const line of memoryLines(load.memory)) out(line);
    out(
      `sidecar counted: ${String(stats.compactions_performed)} compactions, ${String(stats.summaries_reused)} reused summaries, ` +
        `${String(stats.oversized_spills)} spills, archive_deferred ${String(stats.archive_deferred)}, fail_open ${JSON.stringify(stats.fail_open)}`,
    );
    const unanswered = phase1.sent + phase2.sent - phase1.answered - phase2.answered;
    out(unanswered === 0 ? 'every request answered' : `NOT ANSWERED: ${unanswered} request(s)`);
  } finally {
    await sidecar.stop();
    await stub.stop();
  }
  if (profileDir) {
    for (const f of readdirSync(profileDir).filter((n) => n.endsWith('.cpuprofile')))
      for (const line of summariseProfile(join(profileDir, f))) out(line);
    rmSync(profileDir, { recursive: true, force: true });
  }
}

/** `A=1 B=2` (BENCH_SOAK_ENV, BENCH_SOAK_BASELINE_ENV): variables added to one build's environment. */
function envWords(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const word of (raw ?? '').split(/\s+/).filter(Boolean)) {
    const eq = word.indexOf('=');
    if (eq > 0) out[word.slice(0, eq)] = word.slice(eq + 1);
  }
  return out;
}

export async function run(): Promise<void> {
  const lines: string[] = [machineLine('soak bench')];
  const out = (line: string) => {
    lines.push(line);
    process.stdout.write(`${line}\n`);
  };
  await soakOnce('this build', SIDECAR_MAIN, envWords(process.env.BENCH_SOAK_ENV), out);
  // BENCH_BASELINE: an earlier build soaked the same way in the same run, for a before/after on this machine.
  const baseline = baselineBuild();
  if (baseline)
    await soakOnce(
      `baseline (${process.env.BENCH_BASELINE ?? ''})`,
      baseline,
      envWords(process.env.BENCH_SOAK_BASELINE_ENV),
      out,
    );
  out('');
  await pasteMemory.figures(out);
  const path = writeResults('soak.txt', lines);
  process.stdout.write(`written to ${path}\n`);
}
