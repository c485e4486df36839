import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { countPrompt, startStub } from '@guardian/stub-backend';
import { createLogger } from '@guardian/telemetry';

import { startGuardian } from '../../guardian/src/bootstrap';
import { GuardianConfig } from '../../guardian/src/config/guardian-config';
import { DEMO_TURNS, historyFor } from './script';

/** The settings the demo runs the sidecar with (printed with the table). */
export const DEMO_SETTINGS: Record<string, string> = {
  // The window is detected from the stub's /v1/models (max_model_len 8192), as it would be from vLLM.
  GUARDIAN_RESERVE_OUTPUT: '1024',
  GUARDIAN_COMPACT_THRESHOLD: '0.85',
};
export const DEMO_WINDOW = 8192;

interface TurnResult {
  ok: boolean;
  status: number;
}

async function send(baseUrl: string, turn: number): Promise<TurnResult> {
  const res = await fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: 'Bearer demo',
      'x-guardian-session': 'demo-session',
    },
    body: JSON.stringify({ model: 'stub-model', messages: historyFor(turn), max_tokens: 64 }),
  });
  await res.arrayBuffer();
  return { ok: res.status === 200, status: res.status };
}

export interface DemoReport {
  lines: string[];
  dataDir: string;
  compactions: number;
  summariserCalls: number;
  archivedMessages: number;
  /** The sidecar's `/metrics` exposition after the last turn, when `runDemo` was asked for it. */
  metricsText?: string;
}

/**
 * Runs the scripted session straight to a stub backend with a hard 8,192-token window, then through the sidecar,
 * and returns the table the seed README shows (turn, tokens, direct, through context-guardian).
 */
export async function runDemo(opts: { dataDir?: string; withMetrics?: boolean } = {}): Promise<DemoReport> {
  const stub = await startStub({ window: DEMO_WINDOW, flavor: 'vllm' });
  const dataDir = opts.dataDir ?? (await mkdtemp(join(tmpdir(), 'context-guardian-demo-')));
  const config = GuardianConfig.fromEnv(
    {
      ...DEMO_SETTINGS,
      GUARDIAN_UPSTREAM_URL: stub.baseUrl,
      GUARDIAN_DATA_DIR: dataDir,
      GUARDIAN_PORT: '0',
      GUARDIAN_LOG_LEVEL: 'warn',
    },
    { version: 'demo', home: dataDir },
  );
  const guardian = await startGuardian(config, createLogger({ level: 'warn' }), { port: 0 });
  try {
    const direct: TurnResult[] = [];
    for (let t = 1; t <= DEMO_TURNS; t++) direct.push(await send(stub.baseUrl, t));
    stub.reset();

    const through: { result: TurnResult; compactions: number }[] = [];
    for (let t = 1; t <= DEMO_TURNS; t++) {
      const result = await send(`${guardian.url}/v1`, t);
      // A person reads the answer before typing the next turn; meanwhile a background pre-compaction may run.
      const stats = await idleStats(guardian.url);
      through.push({ result, compactions: stats.compactions_performed });
    }
    const summariserCalls = stub.requests.filter((r) => r.isSummary).length;
    const stats = await idleStats(guardian.url);
    const archivedMessages = await countArchivedMessages(config.paths.spanDir);
    // Read before close: the sidecar's registry goes with it (issue 6 item 3 checks this text).
    const metricsText = opts.withMetrics ? await (await fetch(`${guardian.url}/metrics`)).text() : undefined;

    const lines = [
      `stub backend on 127.0.0.1, ${DEMO_WINDOW.toLocaleString('en-US')}-token window, one scripted session sent twice`,
      'turn   tokens  direct to backend  through context-guardian',
    ];
    let firstRejected: number | undefined;
    for (let t = 1; t <= DEMO_TURNS; t++) {
      const tokens = countPrompt({ model: 'stub-model', messages: historyFor(t) }, 'chat');
      const d = direct[t - 1];
      const g = through[t - 1];
      if (d && !d.ok && firstRejected === undefined) firstRejected = t;
      const directText = d?.ok ? 'ok' : `${d?.status ?? '?'} overflow`;
      const guardText = g?.result.ok
        ? g.compactions > 0
          ? `ok, compactions so far: ${g.compactions}`
          : 'ok'
        : `${g?.result.status ?? '?'} failed`;
      lines.push(
        `${String(t).padStart(4)} ${String(tokens).padStart(8)}  ${directText.padEnd(17)}  ${guardText}`,
      );
    }
    const answered = through.filter((x) => x.result.ok).length;
    lines.push(
      `direct: ${firstRejected ? `rejected from turn ${firstRejected} on` : 'every turn answered'}. proxy: ${answered}/${DEMO_TURNS} turns answered, ` +
        `${stats.compactions_performed} compacted requests, ${archivedMessages} originals archived, ${summariserCalls} summariser calls ` +
        `(${stats.precompact.done} in the background, ahead of need; ${stats.summary_waits} compacted turns waited on one; the others reused a summary).`,
    );
    return {
      lines,
      dataDir,
      compactions: stats.compactions_performed,
      summariserCalls,
      archivedMessages,
      metricsText,
    };
  } finally {
    await guardian.close();
    await stub.close();
  }
}

interface DemoStats {
  compactions_performed: number;
  summary_waits: number;
  precompact: { done: number; running: number };
}

/** /guardian/stats once no background pre-compaction is running (at most a few seconds). */
async function idleStats(url: string): Promise<DemoStats> {
  for (let i = 0; ; i++) {
    const stats = (await (await fetch(`${url}/guardian/stats`)).json()) as DemoStats;
    if (stats.precompact.running === 0 || i >= 200) return stats;
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function countArchivedMessages(spanDir: string): Promise<number> {
  const { readdir, readFile } = await import('node:fs/promises');
  let n = 0;
  for (const run of await readdir(spanDir).catch(() => [] as string[])) {
    for (const f of await readdir(join(spanDir, run)).catch(() => [] as string[])) {
      if (!/^\d{4,}\.json$/.test(f)) continue;
      const span = JSON.parse(await readFile(join(spanDir, run, f), 'utf8')) as { messages?: unknown[] };
      n += span.messages?.length ?? 0;
    }
  }
  return n;
}
