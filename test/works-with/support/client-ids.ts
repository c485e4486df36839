import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { startStub } from '@guardian/stub-backend';

import { sessionHash } from '../../../apps/guardian/src/compaction/request/session';
import { CLIENTS, type ClientSpec } from '../clients';
import { docSnippet } from './doc-snippets';
import { archiveRuns } from './archive-runs';
import { routeOf } from './header-judge';
import { baseEnv, cliSteps, runStep, type HeaderRunOptions } from './header-run';
import { installedVersion } from './install';
import { longPrompt } from './pastes';
import { today } from './report';
import { ANSWER, MODEL } from './session';
import { startSidecar, type Sidecar } from './sidecar';
import { startTap, type Tap, type TapRecord } from './tap';

// Issue 28, Done-when 1: each real client through the built sidecar with NO X-Guardian-Session configured, two
// developers per client (two homes, two first messages, turns interleaved), each found at
// `/guardian/usage?session=<the id the client sent>`, read from what the logging tap saw. The sidecar's window (each
// case's) and the pastes (two on turn 1, one on turn 2) put every client over its budget by turn 2, so each
// developer's conversation is compacted and archived under its own session, as in the issue 21 two-developer row.

/** The client session headers docs/sessions.md lists, in the order guardian tries them (session.ts). */
const ID_HEADERS = ['x-claude-code-session-id', 'session-id', 'thread-id', 'x-session-id', 'session_id'];

/** One client, run with or without a setting of the page; `header` is the id it must send, null for none. */
export interface ClientIdCase {
  client: string;
  setting: string;
  header: string | null;
  /**
   * The sidecar's window: small enough that turn 2 is over the budget (the client's own prompt and tools, plus three
   * pastes of about 4,500 tokens), large enough for the prompt and tools alone (Claude Code's are about 22,000).
   */
  window: number;
  /** The page's snippet (`<!-- header-check: ID -->`) merged into the client's settings, when the case has one. */
  snippet?: string;
}

export const CLIENT_ID_CASES: ClientIdCase[] = [
  { client: 'claude-code', setting: 'none', header: 'x-claude-code-session-id', window: 32_768 },
  { client: 'codex', setting: 'none', header: 'session-id', window: 32_768 },
  { client: 'opencode', setting: 'none', header: 'x-session-id', window: 24_576 },
  { client: 'qwen-code', setting: 'none', header: null, window: 32_768 },
  {
    client: 'qwen-code',
    setting: '`customHeaders` with `${session_id}`',
    header: 'session_id',
    window: 32_768,
    snippet: 'qwen-code/session-id',
  },
];

/** One row of the "Client session ids" table in docs/WORKS_WITH.md. */
export interface ClientIdRow {
  date: string;
  client: string;
  version: string;
  setting: string;
  seen: string;
  result: string;
  detail: string[];
}

export const CLIENT_ID_TABLE_HEAD =
  '| date | client | version | setting (docs/sessions.md) | what each developer sent, and guardian found | result |\n| --- | --- | --- | --- | --- | --- |';
export const clientIdTableRow = (r: ClientIdRow): string =>
  `| ${r.date} | ${r.client} | ${r.version} | ${r.setting} | ${r.seen} | ${r.result} |`;

interface Usage {
  used_after_compaction: number;
  session_source: string | null;
}

interface Developer {
  name: string;
  home: string;
  project: string;
  tap: Tap;
  env: NodeJS.ProcessEnv;
  prompts: string[];
}

/** Two first messages that differ (the developer's name), the same pastes: two people on the same task. */
const promptsOf = (name: string): string[] => [
  `Developer ${name} here. ${longPrompt(1, 3)}\n\n${longPrompt(2, 3)}`,
  longPrompt(3, 3),
];

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** The checked requests (chat, messages, responses, count_tokens) of `records`, with the id each carried. */
function idsSent(
  records: readonly TapRecord[],
  header: string,
): { requests: number; missing: number; ids: string[] } {
  const checked = records.filter((r) => routeOf(r) !== undefined);
  const values = checked.map((r) => one(r.headers[header]));
  return {
    requests: checked.length,
    missing: values.filter((v) => v === undefined || v.trim() === '').length,
    ids: [...new Set(values.filter((v): v is string => v !== undefined && v.trim() !== ''))],
  };
}

async function usageOf(sidecar: Sidecar, id: string): Promise<Usage | undefined> {
  const res = await fetch(`${sidecar.url}/guardian/usage?session=${encodeURIComponent(id)}`);
  return res.status === 200 ? ((await res.json()) as Usage) : undefined;
}

/** Writes the page's snippet into the settings file the client's spec wrote (Qwen Code: `~/.qwen/settings.json`). */
function applySnippet(c: ClientIdCase, home: string, values: { origin: string; model: string }): void {
  if (!c.snippet) return;
  const file = join(home, '.qwen', 'settings.json');
  const base = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>) : {};
  const page = JSON.parse(docSnippet(c.snippet, { ...values, token: '' })) as Record<string, unknown>;
  writeFileSync(file, JSON.stringify({ ...base, ...page }, null, 2));
}

export async function runClientIdCase(c: ClientIdCase, o: HeaderRunOptions): Promise<ClientIdRow> {
  const spec = CLIENTS.find((s) => s.name === c.client);
  const found = spec && installedVersion(o.clientsDir, spec);
  const row = (seen: string, result: string, detail: string[] = []): ClientIdRow => ({
    date: today(),
    client: c.client,
    version: found ? found.version : '-',
    setting: c.setting,
    seen,
    result,
    detail,
  });
  if (!spec || !found) return row('-', 'FAIL: not installed (run with --install)');
  const dir = join(o.work, `client-ids-${c.client}-${c.snippet ? 'setting' : 'none'}`);
  mkdirSync(dir, { recursive: true });
  const stub = await startStub({
    window: 262144,
    flavor: 'vllm',
    model: MODEL,
    reply: () => ({ text: `${ANSWER}: ok.` }),
  });
  let sidecar: Sidecar | undefined;
  const devs: Developer[] = [];
  try {
    sidecar = await startSidecar({
      upstreamUrl: stub.baseUrl,
      dataDir: join(dir, 'data'),
      logPath: join(dir, 'sidecar.log'),
      env: { GUARDIAN_NUM_CTX: String(c.window) },
    });
    for (const name of ['alice', 'bob']) devs.push(await developer(spec, c, name, dir, sidecar));
    return await judge(c, row, await interleave(spec, found.bin, devs, sidecar, o), sidecar);
  } finally {
    for (const d of devs) await d.tap.close();
    await sidecar?.stop();
    await stub.close();
  }
}

async function developer(
  spec: ClientSpec,
  c: ClientIdCase,
  name: string,
  dir: string,
  sidecar: Sidecar,
): Promise<Developer> {
  const home = join(dir, name, 'home');
  const project = join(dir, name, 'project');
  mkdirSync(home, { recursive: true });
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, 'README.md'), '# scratch project\n');
  const tap = await startTap(sidecar.url);
  // The runner's own setup: endpoint, stand-in key, model, telemetry and update switches; no session header.
  const env = { ...baseEnv(home), ...spec.setup({ home, project, origin: tap.url, model: MODEL }) };
  applySnippet(c, home, { origin: tap.url, model: MODEL });
  return { name, home, project, tap, env, prompts: promptsOf(name) };
}

interface Interleaved {
  failures: string[];
  /** Each developer's usage of each id it sent, right after its own last turn. */
  after: Map<string, Map<string, Usage | undefined>>;
  devs: Developer[];
}

/** alice, bob, alice, bob: as two people at work. */
async function interleave(
  spec: ClientSpec,
  bin: string,
  devs: Developer[],
  sidecar: Sidecar,
  o: HeaderRunOptions,
): Promise<Interleaved> {
  const failures: string[] = [];
  const after = new Map<string, Map<string, Usage | undefined>>();
  for (const turn of [0, 1]) {
    for (const d of devs) {
      const step = cliSteps(spec, d.home, d.prompts)[turn];
      if (!step) continue;
      const why = await runStep({ bin, step, env: d.env, cwd: d.project, timeoutMs: o.turnTimeoutMs });
      if (why) failures.push(`${d.name} turn ${turn + 1}: ${why}`);
      const ids = new Set(ID_HEADERS.flatMap((h) => idsSent(d.tap.records, h).ids));
      const usages = new Map<string, Usage | undefined>();
      for (const id of ids) usages.set(id, await usageOf(sidecar, id));
      after.set(d.name, usages);
    }
  }
  return { failures, after, devs };
}

async function judge(
  c: ClientIdCase,
  row: (seen: string, result: string, detail?: string[]) => ClientIdRow,
  got: Interleaved,
  sidecar: Sidecar,
): Promise<ClientIdRow> {
  const failures = [...got.failures];
  const detail: string[] = [];
  const seen: string[] = [];
  const idsOf = new Map<string, string[]>();
  for (const d of got.devs) {
    if (d.tap.records.some((r) => r.headers['x-guardian-session'] !== undefined))
      failures.push(`${d.name}: an X-Guardian-Session was sent`);
    const sent = ID_HEADERS.map((h) => ({ h, ...idsSent(d.tap.records, h) })).filter((s) => s.ids.length);
    detail.push(
      `${d.name}: ${sent.map((s) => `${s.h} x${s.requests - s.missing} (${s.ids.length} value${s.ids.length === 1 ? '' : 's'})`).join(', ') || 'no client id header'}`,
    );
    if (c.header === null) {
      if (sent.length) failures.push(`${d.name} sent ${sent.map((s) => s.h).join(', ')}`);
      seen.push(`${d.name}: no id`);
      continue;
    }
    const mine = idsSent(d.tap.records, c.header);
    idsOf.set(d.name, mine.ids);
    if (mine.requests === 0) failures.push(`${d.name}: no chat/messages/responses/count_tokens request`);
    if (mine.missing) failures.push(`${d.name}: ${c.header} missing on ${mine.missing} of ${mine.requests}`);
    const found: string[] = [];
    for (const id of mine.ids) {
      const now = await usageOf(sidecar, id);
      if (!now) failures.push(`${d.name}: no /guardian/usage for the ${c.header} it sent`);
      else if (now.session_source !== c.header)
        failures.push(`${d.name}: usage says session_source ${String(now.session_source)}, not ${c.header}`);
      else found.push(`${now.used_after_compaction} tokens`);
      // Unchanged since this developer's own last turn, whatever the other one sent since.
      const then = got.after.get(d.name)?.get(id);
      if (now && then && JSON.stringify(now) !== JSON.stringify(then))
        failures.push(`${d.name}'s usage changed after the other developer's turn`);
    }
    seen.push(
      `${d.name}: ${c.header} on ${mine.requests - mine.missing} of ${mine.requests} requests, ` +
        `${mine.ids.length} id${mine.ids.length === 1 ? '' : 's'}; usage by id: ${found.join(', ') || 'none'}`,
    );
  }
  const stats = await sidecar.stats();
  const rows = (stats.sessions ?? []) as { session: string; session_source: string | null }[];
  const runs = archiveRuns(sidecar.dataDir);
  if (c.header === null) {
    // No id: each developer's session is derived from their own first messages, so the two still stay apart.
    const derived = rows.filter((r) => r.session_source === 'derived');
    if (derived.length < 2) failures.push(`${derived.length} derived sessions for two developers`);
    seen.push(`${derived.length} derived sessions in all`);
  } else {
    const [a = [], b = []] = [idsOf.get('alice'), idsOf.get('bob')];
    if (a.some((id) => b.includes(id))) failures.push('both developers sent the same id');
    const sources = [...new Set(rows.map((r) => r.session_source))];
    if (sources.length !== 1 || sources[0] !== c.header)
      failures.push(`sessions by source: ${sources.map(String).join(', ')}`);
    // Every archive run belongs to one developer's id; each developer was compacted into its own.
    const hashes = new Map<string, string>([
      ...a.map((id): [string, string] => [sessionHash(id), 'alice']),
      ...b.map((id): [string, string] => [sessionHash(id), 'bob']),
    ]);
    const owners = runs.map((r) => hashes.get(r.session));
    if (owners.includes(undefined)) failures.push(`${runs.length} archive runs, some under no id sent`);
    for (const name of ['alice', 'bob'])
      if (!owners.includes(name)) failures.push(`no archive run under ${name}'s id`);
  }
  detail.push(
    `sessions ${rows.length} (${rows.map((r) => r.session_source).join(', ')}); archive runs ${runs.length}; ` +
      `compactions ${String(stats.compactions_performed)}; fail_open ${JSON.stringify(stats.fail_open)}`,
  );
  return row(seen.join('; '), failures.length ? `FAIL: ${failures.join('; ')}` : 'PASS', detail);
}
