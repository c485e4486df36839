import { readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';

import { createLogger } from '@guardian/telemetry';

import { overBudgetChat, WINDOW_ENV } from '../dashboard/support';
import { startStack, type Stack } from '../support/stack';

/** Two developers and an admin (docs/team.md). The tokens are distinctive so a leak is found by grepping for them. */
export const TOKENS = {
  alice: 'tok-alice-7d41c09e5b2a',
  bob: 'tok-bob-2f86ea13c47d',
  admin: 'adm-team-91c3e5f70b28',
} as const;
export type Who = keyof typeof TOKENS;

export interface TeamStack extends Stack {
  /** Every line guardian logged, at debug level. */
  logs(): string;
  tokensFile: string;
  /** GET on the sidecar as `who` (no token when undefined), with the JSON body. */
  get(path: string, who?: string): Promise<{ status: number; body: Record<string, any>; text: string }>;
}

/**
 * A sidecar in team mode in front of the stub: GUARDIAN_TOKENS_FILE names alice and bob, GUARDIAN_ADMIN_TOKEN is set,
 * a fixed 8,192-token window so one request of {@link overBudgetChat} compacts, and a logger that keeps every line.
 */
export async function startTeamStack(env: Record<string, string> = {}): Promise<TeamStack> {
  const dir = await mkdtemp(join(tmpdir(), 'cg-team-'));
  const tokensFile = join(dir, 'tokens');
  await writeFile(tokensFile, `# test team\n${TOKENS.alice} alice\n${TOKENS.bob} bob\n`);
  let logs = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs += chunk.toString('utf8');
      done();
    },
  });
  const stack = await startStack({
    stub: { window: 8192 },
    env: {
      ...WINDOW_ENV,
      GUARDIAN_TOKENS_FILE: tokensFile,
      GUARDIAN_ADMIN_TOKEN: TOKENS.admin,
      GUARDIAN_LOG_LEVEL: 'debug',
      ...env,
    },
    logger: createLogger({ level: 'debug', destination: sink }),
  });
  return {
    ...stack,
    tokensFile,
    logs: () => logs,
    async get(path, who) {
      const headers: Record<string, string> = { accept: 'application/json' };
      if (who !== undefined) headers['x-guardian-token'] = who in TOKENS ? TOKENS[who as Who] : who;
      const res = await fetch(`${stack.guardian.url}${path}`, { headers });
      const text = await res.text();
      let body: Record<string, any> = {};
      try {
        body = JSON.parse(text) as Record<string, any>;
      } catch {
        // A non-JSON answer (the dashboard page) is checked through `text`.
      }
      return { status: res.status, body, text };
    },
    async close() {
      await stack.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** POSTs one over-budget chat through the sidecar as `who`, with `session` in X-Guardian-Session and any `headers`. */
export async function chatAs(
  stack: Stack,
  who: Who | undefined,
  opts: { session?: string; tag: string; marker?: string; headers?: Record<string, string> },
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    authorization: 'Bearer sk-upstream-key',
    ...opts.headers,
  };
  if (who !== undefined) headers['x-guardian-token'] = TOKENS[who];
  if (opts.session !== undefined) headers['x-guardian-session'] = opts.session;
  const res = await fetch(`${stack.baseURL}/chat/completions`, {
    method: 'POST',
    headers,
    body: overBudgetChat({ tag: opts.tag, marker: opts.marker }),
  });
  const text = await res.text();
  return { status: res.status, body: text.startsWith('{') ? JSON.parse(text) : text };
}

/**
 * Waits until the writers' served checkpoints cover every span file on the volume (a checkpoint follows each group
 * commit, ADR 0017), and returns that count: a verify after it sees the same log whenever it runs.
 */
export async function loggedSpans(stack: TeamStack): Promise<number> {
  const spanDir = join(stack.dataDir, 'spans');
  const spans = readdirSync(spanDir)
    .filter((r) => !r.startsWith('.'))
    .flatMap((r) => readdirSync(join(spanDir, r)).filter((f) => /^\d{4}\.json$/.test(f))).length;
  for (;;) {
    const listed = (await stack.get('/guardian/archive/logs', 'admin')).body.logs as {
      size: number | null;
    }[];
    if (listed.reduce((n, l) => n + (l.size ?? 0), 0) >= spans) return spans;
    await new Promise((r) => setTimeout(r, 50));
  }
}
