import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { startStub, type StubBackend } from '@guardian/stub-backend';

import { CLIENTS, COMMON_ENV, type ClientSpec } from '../clients';
import { DOC_SESSION, docSnippet } from './doc-snippets';
import { TOKEN, type HeaderCase } from './header-cases';
import { judgeHeaders, mainRequestTokens, type HeaderVerdict } from './header-judge';
import { SDK_DRIVERS, sdkAnswered } from './header-sdk';
import { installedVersion } from './install';
import { runProc } from './proc';
import { today } from './report';
import { ANSWER, MODEL, lastLine } from './session';
import { startSidecar, type Sidecar } from './sidecar';
import { startTap, type Tap } from './tap';

/** One row of the "Session headers" table in docs/WORKS_WITH.md. */
export interface HeaderRow {
  date: string;
  client: string;
  version: string;
  setting: string;
  checked: string;
  result: string;
  detail: string[];
}

export const HEADER_TABLE_HEAD =
  '| date | client | version | setting (docs/sessions.md) | requests checked | result |\n| --- | --- | --- | --- | --- | --- |';
export const headerTableRow = (r: HeaderRow): string =>
  `| ${r.date} | ${r.client} | ${r.version} | ${r.setting} | ${r.checked} | ${r.result} |`;

export interface HeaderRunOptions {
  clientsDir: string;
  work: string;
  turnTimeoutMs: number;
}

/** One client process run: the command, and whether its prompt goes on stdin. */
interface Step {
  args: string[];
  input?: string;
  /** The turn must print the stub's answer (a `/context` turn prints a table instead). */
  answers: boolean;
}

export const PROMPTS = ['Reply with one short line.', 'Continue: reply with one short line again.'];

/** The environment every client starts from: its own home, no proxies, no telemetry (as the other modes). */
export function baseEnv(home: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    ...COMMON_ENV,
  };
}

export function cliSteps(
  spec: ClientSpec,
  home: string,
  prompts: readonly string[],
  context = false,
): Step[] {
  const run = { home, project: '', origin: '', model: MODEL };
  const steps = prompts.map((p, i): Step => {
    const how = i === 0 ? spec.first(p, run) : (spec.next?.(p, run) ?? spec.first(p, run));
    return { args: how.args, input: how.stdin ? p : undefined, answers: true };
  });
  const ctx = spec.next?.('/context', run);
  if (context && ctx)
    steps.push({ args: ctx.args, input: ctx.stdin ? '/context' : undefined, answers: false });
  return steps;
}

/** Runs `bin args` (after sourcing the page's shell snippet, when there is one) and says how it went. */
export async function runStep(o: {
  bin: string;
  step: Step;
  env: NodeJS.ProcessEnv;
  cwd: string;
  shell?: string;
  timeoutMs: number;
}): Promise<string | undefined> {
  const { bin, step } = o;
  const cmd = o.shell === undefined ? bin : 'bash';
  const args = o.shell === undefined ? step.args : ['-c', `${o.shell}\nexec "$0" "$@"`, bin, ...step.args];
  const out = await runProc({ cmd, args, env: o.env, cwd: o.cwd, timeoutMs: o.timeoutMs, input: step.input });
  if (out.timedOut) return 'timed out';
  if (out.code !== 0) return `exit ${String(out.code)}: ${lastLine(out.stderr)}`;
  if (step.answers && !out.stdout.includes(ANSWER)) return `the stub's answer is not in the output`;
  return undefined;
}

interface Usage {
  used_after_compaction: number;
  count_source: string;
}

export async function usageOf(sidecar: Sidecar, session: string): Promise<Usage | undefined> {
  const res = await fetch(`${sidecar.url}/guardian/usage?session=${encodeURIComponent(session)}`);
  return res.status === 200 ? ((await res.json()) as Usage) : undefined;
}

/** One setting of the page, run with its real client behind the logging proxy (the tap). */
export async function runHeaderCase(c: HeaderCase, o: HeaderRunOptions): Promise<HeaderRow> {
  const spec = CLIENTS.find((s) => s.name === c.client);
  const sdk = SDK_DRIVERS[c.client];
  const found = spec ? installedVersion(o.clientsDir, spec) : undefined;
  const version = spec ? found?.version : sdk?.version();
  const row = (checked: string, result: string, detail: string[] = []): HeaderRow => ({
    date: today(),
    client: spec?.name ?? sdk?.name ?? c.client,
    version: version ?? '-',
    setting: c.control ? `${c.label} (control: ${c.control})` : c.label,
    checked,
    result,
    detail,
  });
  if (version === undefined) return row('-', 'FAIL: not installed (run with --install)');

  const dir = join(o.work, `headers-${slug(`${c.client}-${c.label}`)}`);
  const home = join(dir, 'home');
  const project = join(dir, 'project');
  mkdirSync(home, { recursive: true });
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, 'README.md'), '# scratch project for a context-guardian header check\n');
  const stub = await startStub({
    window: 262144,
    flavor: 'vllm',
    model: MODEL,
    reply: () => ({ text: `${ANSWER}: the stub backend answered.` }),
    ...c.stub,
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
    const values = { origin: tap.url, model: MODEL, token: TOKEN };
    const prepared = c.prepare({ home, values });
    const env = { ...baseEnv(home), ...prepared.env };
    const failures: string[] = [];
    const usages: (Usage | undefined)[] = [];
    if (spec && found) {
      for (const step of cliSteps(spec, home, PROMPTS, c.contextTurn)) {
        const why = await runStep({
          bin: found.bin,
          step,
          env,
          cwd: project,
          shell: prepared.shell,
          timeoutMs: o.turnTimeoutMs,
        });
        if (why) failures.push(`turn ${usages.length + 1}: ${why}`);
        usages.push(await usageOf(sidecar, DOC_SESSION));
      }
    } else if (sdk) {
      const page = docSnippet(`sdk/${c.client}`, values);
      const s = sdk.script(dir, c.sdkSnippet ? c.sdkSnippet(page) : page, MODEL);
      const out = await runProc({
        cmd: s.cmd,
        args: s.args,
        env: { ...env, ...s.env },
        cwd: project,
        timeoutMs: o.turnTimeoutMs,
      });
      if (out.code !== 0 || !sdkAnswered(out.stdout))
        failures.push(`exit ${String(out.code)}: ${errorLine(out.stderr)}`);
      usages.push(await usageOf(sidecar, DOC_SESSION));
    }
    return judgeCase(c, row, { verdict: judgeHeaders(tap.records, c.expect), failures, usages, tap, stub });
  } finally {
    await tap?.close();
    await sidecar?.stop();
    await stub.close();
  }
}

function judgeCase(
  c: HeaderCase,
  row: (checked: string, result: string, detail?: string[]) => HeaderRow,
  got: {
    verdict: HeaderVerdict;
    failures: string[];
    usages: (Usage | undefined)[];
    tap: Tap;
    stub: StubBackend;
  },
): HeaderRow {
  const { verdict } = got;
  const detail = [
    ...(verdict.unchecked.length ? [`not checked: ${verdict.unchecked.join(', ')}`] : []),
    ...(verdict.warnings.length ? [`guardian warned: ${verdict.warnings.join('; ')}`] : []),
  ];
  if (c.control) {
    // A control passes when the check catches what the page must not tell anyone to do.
    const caught = verdict.problems.length > 0;
    const seen = [...verdict.problems, ...got.failures].join('; ');
    return row(verdict.checked, caught ? `caught: ${seen}` : 'FAIL: not caught', detail);
  }
  const failures = [...got.failures, ...verdict.problems];
  const usage = got.usages.at(-1);
  const main = mainRequestTokens(got.tap.records, got.stub.requests);
  if (!usage) failures.push(`no /guardian/usage for ${DOC_SESSION}`);
  else if (main && usage.count_source !== 'tokenize')
    failures.push(
      `usage is guardian's estimate (${usage.count_source}): the backend's count did not reach it`,
    );
  else if (main && usage.used_after_compaction !== main.tokens)
    failures.push(
      `usage shows ${usage.used_after_compaction} tokens, the main request (${main.tools} tools) had ${main.tokens}`,
    );
  if (main && usage?.used_after_compaction === main.tokens)
    detail.push(`usage ${usage.used_after_compaction} tokens = the last request with ${main.tools} tools`);
  if (c.contextTurn) {
    const [before, after] = [got.usages.at(-2), got.usages.at(-1)];
    if (before?.used_after_compaction !== after?.used_after_compaction)
      failures.push(
        `/context moved usage from ${before?.used_after_compaction} to ${after?.used_after_compaction}`,
      );
    else detail.push(`/context left usage at ${after?.used_after_compaction}`);
  }
  return row(verdict.checked, failures.length ? `FAIL: ${failures.join('; ')}` : 'PASS', detail);
}

/** A folder name for a case: its client and setting in word characters, short enough for any filesystem. */
const slug = (text: string): string => text.replace(/\W+/g, '-').replace(/^-|-$/g, '').slice(0, 80);

/** The line of a script's error output that names the error (an uncaught throw ends with Node's version line). */
const errorLine = (stderr: string): string =>
  lastLine(
    stderr
      .split('\n')
      .filter((l) => /Error\b/.test(l))
      .join('\n') || stderr,
  );
