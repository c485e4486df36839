// `npm run bench -- prefix-cache [--turns 40]`: how much of each prompt a real llama.cpp server serves from its prefix
// cache over a long compacting session (issue 20), sent direct (until the window refuses it) and through guardian,
// with a summariser that works (summary requests routed to the stub) and one that cannot summarise (the tiny model).
// Needs a llama-server build (docs/WORKS_WITH.md; CG_LLAMA_SERVER, default ~/.cache/context-guardian/llama/...) and
// the tiny model beside the checkout (CG_LLAMA_MODEL, default ../shared/models/llama-2-tiny-random.gguf).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { SUMMARY_REQUEST_TAG } from '@guardian/compaction';
import { startStub } from '@guardian/stub-backend';
import { createLogger } from '@guardian/telemetry';

import { startGuardian } from '../apps/guardian/src/bootstrap';
import { GuardianConfig } from '../apps/guardian/src/config/guardian-config';
import { filler, writeResults } from './support';

const WINDOW = 4096;
const LLAMA =
  process.env.CG_LLAMA_SERVER ??
  join(homedir(), '.cache', 'context-guardian', 'llama', 'src', 'build', 'bin', 'llama-server');
const MODEL =
  process.env.CG_LLAMA_MODEL ?? resolve(process.cwd(), '..', 'shared', 'models', 'llama-2-tiny-random.gguf');

interface Row {
  path: string;
  answered: number;
  compacted: number;
  calls: number;
  cacheShare: number;
}

async function startLlama(): Promise<{ url: string; stop(): Promise<void> }> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  // As ../shared/models/README.md runs it: one slot, EOS biased so answers stay short, offline, loopback.
  const args = ['-m', MODEL, '--ctx-size', String(WINDOW), '-np', '1', '-ngl', '0', '-l', '2+1', '--offline'];
  const child = spawn(LLAMA, [...args, '--host', '127.0.0.1', '--port', String(port)], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    const ok = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await sleep(50);
  }
  return {
    url,
    stop: () =>
      new Promise<void>((r) => {
        child.once('exit', () => r());
        child.kill('SIGTERM');
      }),
  };
}

/** An HTTP front that sends summary requests to one origin and everything else to another. */
async function startRouter(
  llama: string,
  summaries: string,
): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const target = new URL(body.includes(SUMMARY_REQUEST_TAG) ? summaries : llama);
      const up = httpRequest(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      up.on('error', () => res.destroy());
      up.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** Sends the session turn by turn to `base` (`.../v1`); returns what each answered turn's prompt took from the cache. */
async function session(
  base: string,
  turns: number,
): Promise<{ answered: number; cacheN: number; promptN: number }> {
  const history: { role: string; content: string }[] = [
    { role: 'system', content: 'You keep a deploy log.' },
  ];
  let answered = 0;
  let cacheN = 0;
  let promptN = 0;
  for (let t = 1; t <= turns; t++) {
    history.push({ role: 'user', content: `Step ${t}: ${filler(690, t)}` });
    const res = await fetch(`${base}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-guardian-session': 'prefix-cache' },
      body: JSON.stringify({ model: 'tiny', messages: history, max_tokens: 16 }),
    });
    const json = (await res.json()) as {
      choices?: { message?: { content?: string } }[];
      timings?: { cache_n?: number; prompt_n?: number };
    };
    // Direct, the window refuses the request (400) and the session ends there for the client. The tiny model's
    // random output sometimes fails llama-server's own chat parser (a 500, docs/WORKS_WITH.md): the turn goes on.
    if (res.status === 400) break;
    if (res.status === 200) {
      answered += 1;
      cacheN += json.timings?.cache_n ?? 0;
      promptN += json.timings?.prompt_n ?? 0;
    }
    history.push({ role: 'assistant', content: json.choices?.[0]?.message?.content ?? 'ok' });
  }
  return { answered, cacheN, promptN };
}

async function throughGuardian(upstream: string, turns: number, label: string): Promise<Row> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cg-bench-cache-'));
  const config = GuardianConfig.fromEnv(
    {
      GUARDIAN_UPSTREAM_URL: `${upstream}/v1`,
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_LOG_LEVEL: 'warn',
      GUARDIAN_RESERVE_OUTPUT: '512',
      // Turns go back to back here; pre-compaction would only move the summary calls, not the cache figures.
      GUARDIAN_PRECOMPACT_THRESHOLD: '0',
    },
    { version: 'bench', home: dataDir },
  );
  const guardian = await startGuardian(config, createLogger({ level: 'warn' }), { port: 0 });
  try {
    const s = await session(`${guardian.url}/v1`, turns);
    const stats = (await (await fetch(`${guardian.url}/guardian/stats`)).json()) as {
      compactions_performed: number;
      summariser_calls: number;
    };
    return {
      path: label,
      answered: s.answered,
      compacted: stats.compactions_performed,
      calls: stats.summariser_calls,
      cacheShare: s.cacheN / Math.max(1, s.cacheN + s.promptN),
    };
  } finally {
    await guardian.close(200);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const v = i === -1 ? undefined : Number(process.argv[i + 1]);
  return v !== undefined && Number.isFinite(v) ? v : fallback;
}

export async function run(): Promise<void> {
  if (!existsSync(LLAMA) || !existsSync(MODEL)) {
    process.stdout.write(
      `  skipped: ${existsSync(LLAMA) ? MODEL : LLAMA} is missing (see docs/WORKS_WITH.md)\n`,
    );
    return;
  }
  const turns = option('--turns', 40);
  const rows: Row[] = [];
  // A fresh server for each run: its one slot's cache starts empty every time.
  for (const path of ['direct', 'guardian, working summariser', 'guardian, failing summariser'] as const) {
    const llama = await startLlama();
    const stub = await startStub({ window: 1_000_000 });
    const router = await startRouter(llama.url, stub.url);
    try {
      if (path === 'direct') {
        const s = await session(`${llama.url}/v1`, turns);
        rows.push({
          path,
          answered: s.answered,
          compacted: 0,
          calls: 0,
          cacheShare: s.cacheN / Math.max(1, s.cacheN + s.promptN),
        });
      } else {
        rows.push(await throughGuardian(path.includes('working') ? router.url : llama.url, turns, path));
      }
    } finally {
      await router.close();
      await stub.close();
      await llama.stop();
    }
    process.stdout.write(`  ${path}: done\n`);
  }
  const lines = [
    `${turns}-turn session of ~700-character turns, llama-server (tiny model) with a ${WINDOW}-token window and one slot, GUARDIAN_RESERVE_OUTPUT=512`,
    'path                            answered (200)  compacted turns  summariser calls  calls/compacted turn  prompt tokens from cache',
    ...rows.map(
      (r) =>
        `${r.path.padEnd(30)}  ${`${r.answered}/${turns}`.padStart(14)}  ${String(r.compacted).padStart(15)}  ${String(r.calls).padStart(16)}  ${(r.calls / Math.max(1, r.compacted)).toFixed(2).padStart(20)}  ${`${(r.cacheShare * 100).toFixed(1)}%`.padStart(24)}`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  writeResults('prefix-cache.txt', lines);
}
