import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { startStub } from '@guardian/stub-backend';

import type { Usage } from '../../../apps/cli/src/statusline/usage-client';
import { usageLine } from '../../../apps/cli/src/statusline/usage-line';
import { sessionHash } from '../../../apps/guardian/src/compaction/request/session';
import { CLIENTS } from '../clients';
import { archiveRuns } from './archive-runs';
import { DOC_SESSION } from './doc-snippets';
import { HEADER_CASES, TOKEN, type HeaderCase } from './header-cases';
import { judgeHeaders } from './header-judge';
import { baseEnv, cliSteps, runStep, type HeaderRow, type HeaderRunOptions } from './header-run';
import { installedVersion } from './install';
import { longPrompt } from './pastes';
import { REPO_ROOT } from './paths';
import { today } from './report';
import { ANSWER, MODEL } from './session';
import { startSidecar, type Sidecar } from './sidecar';
import { startTap, type Tap } from './tap';

// Issue 21: two developers through one sidecar with two different clients, each configured exactly as the page
// shows (bob's file is alice's with his name): separate usage, separate status lines, separate runs in the archive.
// The sidecar's window (32,768) leaves room above both clients' own prompts and tools (about 22,000 tokens for Claude
// Code, 10,000 for Codex), and the pastes (two on turn 1, one on turn 2, about 4,500 tokens each) put both over the
// budget by turn 2, so that both conversations are compacted and archived.

const STATUSLINE = join(REPO_ROOT, 'dist', 'apps', 'cli', 'src', 'statusline', 'main.js');

interface Developer {
  name: string;
  c: HeaderCase;
  home: string;
  project: string;
  tap?: Tap;
  shell?: string;
  env: NodeJS.ProcessEnv;
  bin: string;
  version: string;
}

const caseFor = (client: string, label: string): HeaderCase => {
  const c = HEADER_CASES.find((x) => x.client === client && x.label === label && !x.control);
  if (!c) throw new Error(`no header case ${client} ${label}`);
  return c;
};

/** The built status line, as a developer's client runs it: `--url` and `--session`, one line on stdout. */
function statusLine(sidecar: Sidecar, session: string): string {
  const r = spawnSync(process.execPath, [STATUSLINE, '--url', sidecar.url, '--session', session], {
    encoding: 'utf8',
  });
  return r.stdout.trim();
}

const PROMPTS = [`${longPrompt(1, 3)}\n\n${longPrompt(2, 3)}`, longPrompt(3, 3)];

export async function runTwoDevelopers(o: HeaderRunOptions): Promise<HeaderRow> {
  const picks: [string, string, string][] = [
    ['alice', 'claude-code', '`~/.claude/settings.json`'],
    ['bob', 'codex', '`http_headers`'],
  ];
  const devs: Developer[] = [];
  for (const [name, client, label] of picks) {
    const spec = CLIENTS.find((s) => s.name === client);
    const found = spec && installedVersion(o.clientsDir, spec);
    if (!found) throw new Error(`${client} is not installed (run with --install)`);
    const dir = join(o.work, `two-developers-${name}`);
    const home = join(dir, 'home');
    const project = join(dir, 'project');
    mkdirSync(home, { recursive: true });
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, 'README.md'), '# scratch project\n');
    devs.push({
      name,
      c: caseFor(client, label),
      home,
      project,
      env: {},
      bin: found.bin,
      version: found.version,
    });
  }
  const stub = await startStub({
    window: 262144,
    flavor: 'vllm',
    model: MODEL,
    reply: () => ({ text: `${ANSWER}: ok.` }),
  });
  const dataDir = join(o.work, 'two-developers-data');
  let sidecar: Sidecar | undefined;
  try {
    sidecar = await startSidecar({
      upstreamUrl: stub.baseUrl,
      dataDir,
      logPath: join(o.work, 'two-developers-sidecar.log'),
      env: { GUARDIAN_NUM_CTX: '32768' },
    });
    for (const d of devs) {
      d.tap = await startTap(sidecar.url);
      // The page's file, with the developer's own name where the page says alice.
      const values = { origin: d.tap.url, model: MODEL, token: TOKEN };
      const prepared = d.c.prepare({ home: d.home, values });
      for (const file of [join(d.home, '.claude', 'settings.json'), join(d.home, '.codex', 'config.toml')]) {
        if (existsSync(file)) writeFileSync(file, readFileSync(file, 'utf8').replaceAll(DOC_SESSION, d.name));
      }
      d.shell = prepared.shell;
      d.env = { ...baseEnv(d.home), ...prepared.env };
    }
    const failures: string[] = [];
    const after = new Map<string, Usage | undefined>();
    const usage = async (name: string): Promise<Usage | undefined> => {
      const res = await fetch(`${sidecar?.url}/guardian/usage?session=${name}`);
      return res.status === 200 ? ((await res.json()) as Usage) : undefined;
    };
    // Interleaved, as two people at work: alice, bob, alice, bob.
    for (const turn of [1, 2]) {
      for (const d of devs) {
        const spec = CLIENTS.find((s) => s.name === d.c.client);
        if (!spec) continue;
        const step = cliSteps(spec, d.home, PROMPTS)[turn - 1];
        if (!step) continue;
        const why = await runStep({
          bin: d.bin,
          step,
          env: d.env,
          cwd: d.project,
          shell: d.shell,
          timeoutMs: o.turnTimeoutMs,
        });
        if (why) failures.push(`${d.name} turn ${turn}: ${why}`);
        after.set(d.name, await usage(d.name));
      }
    }
    const detail: string[] = [];
    const checked: string[] = [];
    for (const d of devs) {
      const v = judgeHeaders(d.tap?.records ?? [], { 'x-guardian-session': d.name });
      checked.push(`${d.name}: ${v.checked}`);
      failures.push(...v.problems.map((p) => `${d.name}: ${p}`));
      const now = await usage(d.name);
      if (!now) failures.push(`no usage for ${d.name}`);
      else if (JSON.stringify(now) !== JSON.stringify(after.get(d.name)))
        failures.push(`${d.name}'s usage changed after the other developer's turn`);
      const line = statusLine(sidecar, d.name);
      if (now && line !== usageLine(now))
        failures.push(`${d.name}'s status line is "${line}", not "${usageLine(now)}"`);
      const runs = archiveRuns(dataDir).filter((r) => r.session === sessionHash(d.name));
      if (runs.length !== 1 || (runs[0]?.spans ?? 0) === 0)
        failures.push(`${d.name} has ${runs.length} runs with spans`);
      detail.push(
        `${d.name}: usage ${now?.used_after_compaction}, line "${line}", run ${runs[0]?.run} (${runs[0]?.spans} spans)`,
      );
    }
    const all = archiveRuns(dataDir);
    const known = new Set(devs.map((d) => sessionHash(d.name)));
    if (all.some((r) => !known.has(r.session)))
      failures.push(`${all.length} runs, some of neither developer`);
    const [a, b] = devs.map((d) => after.get(d.name)?.used_after_compaction);
    if (a === b) failures.push(`both developers show ${a} tokens`);
    return {
      date: today(),
      client: devs.map((d) => d.c.client).join(' + '),
      version: devs.map((d) => d.version).join(' + '),
      setting: `two developers, one sidecar: ${devs.map((d) => `${d.name} with ${d.c.label}`).join(', ')}`,
      checked: checked.join('; '),
      result: failures.length ? `FAIL: ${failures.join('; ')}` : 'PASS',
      detail,
    };
  } finally {
    for (const d of devs) await d.tap?.close();
    await sidecar?.stop();
    await stub.close();
  }
}
