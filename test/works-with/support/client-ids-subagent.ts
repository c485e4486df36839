import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { format, resolveConfig } from 'prettier';

import { startStub, type RecordedRequest } from '@guardian/stub-backend';

import { CLIENTS } from '../clients';
import type { ClientIdRow } from './client-ids';
import { routeOf } from './header-judge';
import { baseEnv, cliSteps, runStep, type HeaderRunOptions } from './header-run';
import { installedVersion } from './install';
import { REPO_ROOT } from './paths';
import { skeleton, today } from './report';
import { ANSWER, MODEL } from './session';
import { startSidecar, type Sidecar } from './sidecar';
import { startTap, type Tap, type TapRecord } from './tap';

// Issue 28 item 1, sub-agents: does the real Claude Code send `x-claude-code-agent-id` when it starts one? The stub
// answers the main conversation's first request with a call of Claude Code's own sub-agent tool (`Agent` in the
// recorded tool list; `Task` in older releases), so Claude Code starts a sub-agent whose requests the tap sees; every
// other request gets the stub's plain answer, so the sub-agent ends at once and the main conversation with it.

const MARKER = 'CG-SUBAGENT-RUN';
const PROMPT = `${MARKER}: start one general-purpose sub-agent to reply with one short line, then reply with its line.`;
const AGENT_HEADERS = ['x-claude-code-agent-id', 'x-claude-code-parent-agent-id'];

interface Body {
  tools?: { name?: string }[];
  messages?: { role?: string; content?: unknown }[];
}

const bodyOf = (req: RecordedRequest): Body => (typeof req.json === 'object' && req.json ? req.json : {});
const textOf = (content: unknown): string =>
  typeof content === 'string' ? content : JSON.stringify(content ?? '');

/** The call the stub answers with: only to the main conversation's request that asks for it and has no result yet. */
function agentCall(req: RecordedRequest): { id: string; name: string; arguments: string } | undefined {
  const body = bodyOf(req);
  const tool = body.tools?.map((t) => t.name).find((n) => n === 'Agent' || n === 'Task');
  const messages = body.messages ?? [];
  if (!tool || !textOf(messages[0]?.content).includes(MARKER)) return undefined;
  if (messages.some((m) => textOf(m.content).includes('tool_result'))) return undefined;
  return {
    id: 'toolu_cg_subagent_1',
    name: tool,
    arguments: JSON.stringify({
      description: 'Reply with one line',
      prompt: 'Reply with one short line.',
      subagent_type: 'general-purpose',
    }),
  };
}

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** One Claude Code turn that starts a sub-agent against the stub, through the sidecar with no session header. */
export async function runSubAgent(o: HeaderRunOptions): Promise<ClientIdRow> {
  const spec = CLIENTS.find((s) => s.name === 'claude-code');
  const found = spec && installedVersion(o.clientsDir, spec);
  const row = (seen: string, result: string, detail: string[] = []): ClientIdRow => ({
    date: today(),
    client: 'claude-code',
    version: found ? found.version : '-',
    setting: 'none; a sub-agent started (`Agent` tool call from the stub)',
    seen,
    result,
    detail,
  });
  if (!spec || !found) return row('-', 'FAIL: not installed (run with --install)');
  const dir = join(o.work, 'client-ids-subagent');
  const home = join(dir, 'home');
  const project = join(dir, 'project');
  mkdirSync(home, { recursive: true });
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, 'README.md'), '# scratch project\n');
  let calls = 0;
  const stub = await startStub({
    window: 262144,
    flavor: 'vllm',
    model: MODEL,
    reply: (req) => {
      const call = agentCall(req);
      if (!call) return { text: `${ANSWER}: ok.` };
      calls += 1;
      return { text: '', toolCalls: [call] };
    },
  });
  let sidecar: Sidecar | undefined;
  let tap: Tap | undefined;
  try {
    sidecar = await startSidecar({
      upstreamUrl: stub.baseUrl,
      dataDir: join(dir, 'data'),
      logPath: join(dir, 'sidecar.log'),
    });
    tap = await startTap(sidecar.url);
    const env = { ...baseEnv(home), ...spec.setup({ home, project, origin: tap.url, model: MODEL }) };
    const [step] = cliSteps(spec, home, [PROMPT]);
    const failures: string[] = [];
    const why =
      step && (await runStep({ bin: found.bin, step, env, cwd: project, timeoutMs: o.turnTimeoutMs }));
    if (why) failures.push(`turn: ${why}`);
    const checked = tap.records.filter((r) => routeOf(r) !== undefined);
    const agentRequests = checked.filter((r) => r.headers['x-claude-code-agent-id'] !== undefined);
    const sessions = new Set(checked.map((r) => one(r.headers['x-claude-code-session-id'])));
    const headerNames = new Set(checked.flatMap((r) => Object.keys(r.headers)));
    // The id's shape only (hex digits as x, other letters as a): what it is like, not what it was.
    const shapes = [
      ...new Set(agentRequests.map((r) => shapeOf(one(r.headers['x-claude-code-agent-id']) ?? ''))),
    ];
    const detail = [
      `the stub answered ${calls} request(s) with an agent call; ${checked.length} checked requests, ` +
        `${agentRequests.length} with x-claude-code-agent-id (shape ${shapes.join(', ') || '-'}); ` +
        `${sessions.size} x-claude-code-session-id value(s) over all of them`,
      `header names seen: ${[...headerNames].filter((h) => h.startsWith('x-claude-code') || h.startsWith('x-')).join(', ')}`,
    ];
    if (calls === 0) failures.push('Claude Code never offered its sub-agent tool');
    const first = agentRequests[0];
    if (first) detail.push(`recording ${await writeFixture(found.version, first)}`);
    const seen = AGENT_HEADERS.map(
      (h) => `${h} on ${checked.filter((r) => r.headers[h] !== undefined).length} of ${checked.length}`,
    ).join(', ');
    const stats = await sidecar.stats();
    const rows = (stats.sessions ?? []) as unknown[];
    const metrics = await (await fetch(`${sidecar.url}/metrics`)).text();
    const side = /guardian_usage_side_requests_total\{kind="subagent"\} (\d+)/.exec(metrics)?.[1] ?? '0';
    detail.push(`sessions in /guardian/stats ${rows.length}; side requests of kind subagent ${side}`);
    if (agentRequests.length > 0) {
      // A sub-agent never counts as a person: one session, its requests counted as side requests.
      if (rows.length !== 1) failures.push(`${rows.length} sessions for one Claude Code session`);
      if (Number(side) < agentRequests.filter((r) => r.status === 200).length)
        failures.push(`only ${side} subagent side requests counted`);
    }
    const result = failures.length
      ? `FAIL: ${failures.join('; ')}`
      : agentRequests.length > 0
        ? 'PASS'
        : 'not sent: this version sends no x-claude-code-agent-id';
    return row(seen, result, detail);
  } finally {
    await tap?.close();
    await sidecar?.stop();
    await stub.close();
  }
}

const shapeOf = (id: string): string => id.replace(/[0-9a-z]/gi, (c) => (/[0-9a-f]/.test(c) ? 'x' : 'a'));

/** Headers a fixture leaves out: credentials, and what the replaying client sets itself. */
const LEFT_OUT = /authorization|api-key|token|cookie|^host$|^content-length$/i;

/**
 * The sub-agent's first request as a fixture beside the other clients' (test/compaction/fixtures/client-session-ids/,
 * replayed by client-session-ids.e2e-spec.ts): its headers with their values, credentials and host left out, and its
 * body as a skeleton (every text replaced by its length).
 */
async function writeFixture(version: string, rec: TapRecord): Promise<string> {
  const file = join(
    REPO_ROOT,
    'test',
    'compaction',
    'fixtures',
    'client-session-ids',
    `claude-code-${version}-subagent.json`,
  );
  const headers = Object.fromEntries(
    Object.entries(rec.headers)
      .filter(([name]) => !LEFT_OUT.test(name))
      .map(([name, v]) => [name, Array.isArray(v) ? v.join(', ') : (v ?? '')]),
  );
  const fixture = {
    client: 'claude-code',
    package: '@anthropic-ai/claude-code',
    version,
    recorded_on: today(),
    setting: null,
    session_header: 'x-claude-code-session-id',
    subagent_header: 'x-claude-code-agent-id',
    request: {
      method: rec.method,
      route: new URL(rec.url, 'http://x').pathname,
      credential_headers: Object.keys(rec.headers).filter((h) =>
        /authorization|api-key|token|cookie/i.test(h),
      ),
      headers,
      body_skeleton: skeleton(JSON.parse(rec.body.toString('utf8'))),
    },
  };
  // Written as the repository formats its JSON (`npm run check` runs prettier over the fixtures).
  const options = (await resolveConfig(file)) ?? {};
  writeFileSync(file, await format(JSON.stringify(fixture), { ...options, filepath: file }));
  return file.slice(REPO_ROOT.length + 1);
}
