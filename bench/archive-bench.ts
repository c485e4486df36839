// Archive benchmarks (issue 4 "Tests and figures", issue 16, issue 29): a 100 KB span placed (what a request waits for)
// and sealed, with the transparency log on and off (and placed while its checkpoints are written), verify throughput beside sha256sum, search beside grep -r. Sizes: BENCH_ARCHIVE_MB (default 200; issue 4's
// figure is 1024), BENCH_SEARCH_SPANS (default 10000, issue 16's figure). Prints and writes
// bench/results/archive.txt.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { SealedArchive, writerLog, searchArchive, sha256Hex, verifyArchive } from '@guardian/archive';

import { writeResults } from './support';

/** mulberry32: a small seeded generator, so every run builds the same corpus. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VOCAB = (
  'deploy schema rollback cluster token window summary archive replica volume chain anchor verify search ' +
  'index digest session owner budget reserve model upstream request response stream header config helm ' +
  'metric latency error retry timeout backoff queue worker cache redis memo prune repair journal capture'
).split(' ');

function text(rand: () => number, chars: number): string {
  const words: string[] = [];
  let length = 0;
  while (length < chars) {
    const word = VOCAB[Math.floor(rand() * VOCAB.length)] ?? 'x';
    words.push(word);
    length += word.length + 1;
  }
  return words.join(' ');
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

function time(fn: () => void): number {
  const start = performance.now();
  fn();
  return performance.now() - start;
}

async function timeAsync(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

function span(content: string, i: number): Parameters<SealedArchive['write']>[0] {
  return {
    kind: 'compaction',
    sessionHash: sha256Hex(`bench-${Math.floor(i / 500)}`),
    route: 'chat',
    model: 'bench',
    messages: [{ role: 'user', content }],
    firstIndex: 1,
    summary: 'Benchmark span.',
    at: new Date(),
  };
}

function p(xs: number[], q: number): string {
  return percentile(
    [...xs].sort((a, b) => a - b),
    q,
  ).toFixed(2);
}

async function writeBench(root: string, out: string[]): Promise<void> {
  // With the log as the sidecar writes it (a signed checkpoint after each commit, issue 29) and without, interleaved
  // span by span so both meet the same disk and the same neighbours: the figure a request waits for must not move.
  const archives = [true, false].map(
    (logged) =>
      new SealedArchive({
        spanDir: join(root, logged ? 'write' : 'write-nolog'),
        anchorDir: join(root, logged ? 'anchor' : 'anchor-nolog'),
        keepSpans: 100_000,
        replica: 'bench',
        log: logged ? writerLog({ name: 'bench', originPrefix: 'bench' }) : null,
      }),
  );
  const body = text(seeded(1), 100 * 1024);
  // Interleaved: what a request waits for (place: span file fsynced and renamed, chain line written), then the whole
  // seal (write: the run's commit too: folder and chain fsync, anchor fsync, index; with the log, its checkpoint).
  const placed: number[][] = [[], []];
  const sealed: number[][] = [[], []];
  for (let i = 0; i < 300; i += 1) {
    // Which goes first alternates, so neither always follows the other's writes to the disk.
    for (const k of i % 2 === 0 ? [0, 1] : [1, 0]) {
      const archive = archives[k]!;
      let pending: Promise<void> = Promise.resolve();
      placed[k]!.push(
        await timeAsync(async () => {
          pending = (await archive.place(span(body, 0))).sealed;
        }),
      );
      await pending;
      sealed[k]!.push(await timeAsync(() => archive.write(span(body, 0))));
    }
  }
  await Promise.all(archives.map((a) => a.close()));
  for (const [k, label] of ['log on', 'log off'].entries()) {
    out.push(
      `placed 100 KB span, ${label}, what a request waits for (temp, fsync, rename, chain line written): ` +
        `p50 ${p(placed[k]!, 50)} ms, p99 ${p(placed[k]!, 99)} ms (n=300; target p50 <= 2 ms)`,
    );
  }
  for (const [k, label] of ['log on', 'log off'].entries()) {
    out.push(
      `sealed 100 KB span, ${label}, all of it (the above, then folder fsync, chain fsync, anchor fsync, index` +
        `${k === 0 ? ', the signed checkpoint' : ''}): p50 ${p(sealed[k]!, 50)} ms, p99 ${p(sealed[k]!, 99)} ms (n=300)`,
    );
  }
  await overlapBench(root, body, out);
  // Group commit: 8 sessions' spans at once; each run commits its own; 4 spans each, placed back to back.
  const group = new SealedArchive({
    spanDir: join(root, 'group'),
    anchorDir: join(root, 'anchor-group'),
    keepSpans: 100_000,
    replica: 'bench',
  });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 8 }, (_s, sess) =>
      Promise.all(Array.from({ length: 4 }, () => group.write(span(body, sess * 500)))),
    ),
  );
  const ms = performance.now() - started;
  out.push(
    `32 sealed 100 KB spans from 8 sessions at once: ${ms.toFixed(1)} ms in all, ${(ms / 32).toFixed(2)} ms a span`,
  );
}

/**
 * The placed figure while the log's checkpoints are being written (issue 29 audit: above, each placement waits for the
 * last checkpoint first, so no checkpoint fsync ever overlaps one). 8 sessions at once each place spans one after
 * another, waiting for their own run's commit (a session's next turn comes after its answer) and never for the log:
 * the tiles and checkpoints of the others' commits are written while these placements are timed. Log on and off take
 * turns in bursts, each burst's log settled before the next (untimed), so neither meets the other's leftovers.
 */
async function overlapBench(root: string, body: string, out: string[]): Promise<void> {
  const SESSIONS = 8;
  const PER_BURST = 5;
  const BURSTS = 8;
  const archives = [true, false].map(
    (logged) =>
      new SealedArchive({
        spanDir: join(root, logged ? 'overlap' : 'overlap-nolog'),
        anchorDir: join(root, logged ? 'overlap-anchor' : 'overlap-anchor-nolog'),
        keepSpans: 100_000,
        replica: 'bench',
        log: logged ? writerLog({ name: 'bench', originPrefix: 'bench' }) : null,
      }),
  );
  const placed: number[][] = [[], []];
  const checkpoints = new Set<string>();
  for (let burst = 0; burst < BURSTS; burst += 1) {
    for (const [k, archive] of archives.entries()) {
      await Promise.all(
        Array.from({ length: SESSIONS }, async (_s, session) => {
          for (let i = 0; i < PER_BURST; i += 1) {
            const start = performance.now();
            const { sealed } = await archive.place(span(body, session * 500));
            placed[k]!.push(performance.now() - start);
            // Which checkpoint was newest when this placement ended: more than one per burst means they overlapped.
            const note = archive.spanLog?.checkpoint;
            if (note != null) checkpoints.add(note);
            await sealed;
          }
        }),
      );
      await archive.logSettled();
    }
  }
  await Promise.all(archives.map((a) => a.close()));
  const n = SESSIONS * PER_BURST * BURSTS;
  out.push(
    `placed 100 KB span, ${SESSIONS} sessions at once, the log's checkpoints written behind them: log on p50 ` +
      `${p(placed[0]!, 50)} ms, p99 ${p(placed[0]!, 99)} ms; log off p50 ${p(placed[1]!, 50)} ms, p99 ` +
      `${p(placed[1]!, 99)} ms (n=${n} each; ${checkpoints.size} checkpoints were newest as log-on placements ended)`,
  );
}

async function verifyBench(root: string, out: string[]): Promise<void> {
  const megabytes = Number(process.env.BENCH_ARCHIVE_MB ?? '200');
  const spanDir = join(root, 'verify');
  const archive = new SealedArchive({ spanDir, keepSpans: 100_000, replica: 'bench' });
  const rand = seeded(2);
  const body = text(rand, 1024 * 1024);
  const count = Math.max(1, Math.round(megabytes));
  for (let i = 0; i < count; i += 1) await archive.write(span(`${i} ${body}`, i * 100));
  await verifyArchive({ spanDir }); // warm the page cache so both tools read from memory
  let bytes = 0;
  const ms = await timeAsync(async () => {
    const result = await verifyArchive({ spanDir });
    if (!result.ok) throw new Error('the generated archive does not verify');
    bytes = result.runs.reduce((sum, r) => sum + r.bytes, 0);
  });
  const floor = time(() => {
    execFileSync('sh', [
      '-c',
      `find "${spanDir}" -name '*.json' ! -name run.json -print0 | xargs -0 sha256sum > /dev/null`,
    ]);
  });
  const mb = bytes / 1_000_000;
  out.push(
    `verify ${mb.toFixed(0)} MB (${count} spans of ~1 MB): ${(mb / (ms / 1000)).toFixed(0)} MB/s ` +
      `(target >= 300 MB/s); sha256sum on the same files: ${(mb / (floor / 1000)).toFixed(0)} MB/s`,
  );
}

async function searchBench(root: string, out: string[]): Promise<void> {
  const count = Number(process.env.BENCH_SEARCH_SPANS ?? '10000');
  const spanDir = join(root, 'search');
  mkdirSync(spanDir, { recursive: true });
  const archive = new SealedArchive({ spanDir, keepSpans: 100_000, replica: 'bench' });
  const rand = seeded(3);
  let bytes = 0;
  // The corpus is made first (same seed, same spans), then written a run at a time in parallel: each session's run
  // takes its spans in order, the runs' commits overlap.
  const bySession = new Map<number, string[]>();
  for (let i = 0; i < count; i += 1) {
    let content = text(rand, 20 * 1024 + Math.floor(rand() * 80 * 1024));
    if (i % 997 === 0) content += ' the quartz flamingo protocol ';
    bytes += content.length;
    const session = Math.floor(i / 500);
    (bySession.get(session) ?? bySession.set(session, []).get(session)!).push(content);
  }
  await Promise.all(
    [...bySession].map(async ([session, contents]) => {
      for (const content of contents) await archive.write(span(content, session * 500));
    }),
  );
  const term = 'quartz flamingo protocol';
  await searchArchive({ spanDir, term, max: 50 }); // warm
  let hits = 0;
  const ms = await timeAsync(async () => {
    hits = (await searchArchive({ spanDir, term, max: 50 })).total;
  });
  const grepMs = time(() => {
    execFileSync('sh', ['-c', `grep -r -l -i "${term}" "${spanDir}" > /dev/null || true`]);
  });
  out.push(
    `search ${count} spans (${(bytes / 1_000_000).toFixed(0)} MB, 20-100 KB each, seed 3) for "${term}": ` +
      `${ms.toFixed(0)} ms, ${hits} hits (target <= 200 ms); grep -r -l -i: ${grepMs.toFixed(0)} ms`,
  );
}

/** Runs the archive benchmarks, prints the figures and writes them to bench/results/archive.txt. */
export async function run(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'archive-bench-'));
  const out: string[] = [
    `archive bench ${new Date().toISOString()} node ${process.version}, temp dir ${tmpdir()}`,
  ];
  try {
    await writeBench(root, out);
    await verifyBench(root, out);
    await searchBench(root, out);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  const path = writeResults('archive.txt', out);
  process.stdout.write(`${out.join('\n')}\n(written to ${path})\n`);
}

if (require.main === module) {
  void run();
}
