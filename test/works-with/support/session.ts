import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { StubBackend } from '@guardian/stub-backend';

import { COMMON_ENV, type ClientRun, type ClientSpec } from '../clients';
import { until } from '../../support/wait';
import { runProc } from './proc';
import { startSidecar, type Sidecar } from './sidecar';
import { startTap, type Tap } from './tap';

/** The model name every client is configured with; the stub answers to any. */
export const MODEL = 'stub-model';
/** What the stub answers; a turn counts as answered only if this reaches the client's output. */
export const ANSWER = 'CG_OK';

/** One turn of a client: its exit, its output, and where its requests start and end in the tap's and stub's records. */
export interface Turn {
  n: number;
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  answered: boolean;
  ms: number;
  /** `tap.records.slice(tapFrom, tapTo)` are what the client sent during this turn. */
  tapFrom: number;
  tapTo: number;
  /** `stub.requests.slice(stubFrom, stubTo)` are what the sidecar sent upstream during this turn. */
  stubFrom: number;
  stubTo: number;
  /** `/guardian/stats` after the turn. */
  stats: Record<string, unknown>;
}

/** A client in its own home and project folder, talking through a recording tap to its own sidecar. */
export interface ClientSession {
  dir: string;
  /** The client's environment and project folder, for a runner that starts it its own way (the TUI under tmux). */
  env: NodeJS.ProcessEnv;
  project: string;
  tap: Tap;
  sidecar: Sidecar;
  turns: Turn[];
  /** Runs turn `n` (1-based): the first turn starts a conversation, later ones continue it. */
  turn(n: number, prompt: string): Promise<Turn | undefined>;
  close(): Promise<void>;
}

export const dirName = (spec: ClientSpec): string => spec.name.replace(/\W+/g, '-').replace(/-+$/, '');

export async function openClientSession(opts: {
  spec: ClientSpec;
  bin: string;
  stub: StubBackend;
  work: string;
  sidecarEnv: Record<string, string>;
  turnTimeoutMs: number;
  /** Added to the folder name, when one client runs more than one session in the same work folder. */
  label?: string;
}): Promise<ClientSession> {
  const { spec, stub } = opts;
  const dir = join(opts.work, opts.label ? `${dirName(spec)}-${opts.label}` : dirName(spec));
  const home = join(dir, 'home');
  const project = join(dir, 'project');
  mkdirSync(home, { recursive: true });
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, 'README.md'), '# scratch project for a context-guardian client check\n');
  const sidecar = await startSidecar({
    upstreamUrl: stub.baseUrl,
    dataDir: join(dir, 'data'),
    logPath: join(dir, 'sidecar.log'),
    env: opts.sidecarEnv,
  });
  const tap = await startTap(sidecar.url);
  stub.reset();
  const run: ClientRun = { home, project, origin: tap.url, model: MODEL };
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    ...COMMON_ENV,
    ...spec.setup(run),
  };
  const turns: Turn[] = [];
  return {
    dir,
    env,
    project,
    tap,
    sidecar,
    turns,
    async turn(n, prompt) {
      const how = n === 1 ? spec.first(prompt, run) : spec.next?.(prompt, run);
      if (!how) return undefined;
      const tapFrom = tap.records.length;
      const stubFrom = stub.requests.length;
      const started = Date.now();
      const out = await runProc({
        cmd: opts.bin,
        args: how.args,
        env,
        cwd: project,
        timeoutMs: opts.turnTimeoutMs,
        input: how.stdin ? prompt : undefined,
      });
      writeFileSync(join(dir, `turn${n}.stdout`), out.stdout);
      writeFileSync(join(dir, `turn${n}.stderr`), out.stderr);
      // A person reads the answer before the next turn: meanwhile the background pre-compaction, if any, finishes.
      await until('the background pre-compaction to finish', async () => {
        const precompact = (await sidecar.stats()).precompact as { running?: number } | undefined;
        return (precompact?.running ?? 0) === 0;
      });
      const turn: Turn = {
        n,
        ...out,
        answered: out.stdout.includes(ANSWER),
        ms: Date.now() - started,
        tapFrom,
        tapTo: tap.records.length,
        stubFrom,
        stubTo: stub.requests.length,
        stats: await sidecar.stats(),
      };
      turns.push(turn);
      return turn;
    },
    async close() {
      await tap.close();
      await sidecar.stop();
    },
  };
}

/** The last non-empty line of a client's error output, cut short: enough to say why, no prompt echo. */
export const lastLine = (text: string): string =>
  (
    text
      .split('\n')
      .filter((l) => l.trim())
      .pop() ?? ''
  )
    .replace(/\s+/g, ' ')
    .slice(0, 160);
