import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

import type { ClientSpec } from '../clients';
import type { ClientRequest, Forwarded } from './long-check';
import { FACT_SENTENCE, FACT_TOKEN, PASTE_CHARS, pasteTag } from './pastes';
import { REPO_ROOT } from './paths';
import { requestShape, type RequestShape } from './report';
import { dirName } from './session';
import type { TapRecord } from './tap';

export const RECORDINGS = join(REPO_ROOT, 'test', 'works-with', 'recordings');

/**
 * Short runs: `recordings/<client>-<version>.json` (replayed by test/formats/recorded-clients.e2e-spec.ts).
 * Long runs: `recordings/long/<client>-<version>.json`, a folder of their own so that the short replay does not pick
 * them up; the property tests that want them read that folder.
 */
export const recordingPath = (spec: ClientSpec, version: string, long: boolean): string =>
  join(RECORDINGS, ...(long ? ['long'] : []), `${dirName(spec)}-${version}.json`);

function write(path: string, value: unknown): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
  return path.slice(REPO_ROOT.length + 1);
}

export function writeShortRecording(opts: {
  spec: ClientSpec;
  version: string;
  window: number;
  shapes: RequestShape[];
}): string {
  const { spec, version } = opts;
  return write(recordingPath(spec, version, false), {
    client: spec.name,
    package: spec.pkg,
    version,
    guardian_window: opts.window,
    requests: opts.shapes,
  });
}

/**
 * Native runs (issue 27): `recordings/native/<client>-<version>.json`, what the client sent (its compaction requests
 * included) and what the stub received for it, so the strict stub's tests can replay both: the first holds the
 * vocabulary guardian must answer itself, the second must be accepted by a backend that knows none of it.
 */
export function writeNativeRecording(opts: {
  spec: ClientSpec;
  version: string;
  window: number;
  limit: number;
  client: RequestShape[];
  forwarded: RequestShape[];
}): string {
  const { spec, version } = opts;
  const toolSets: Record<string, unknown> = {};
  const lines = (shapes: RequestShape[]): string =>
    shapes.map((s) => `    ${JSON.stringify(withToolSet(s, toolSets))}`).join(',\n');
  const head = {
    client: spec.name,
    package: spec.pkg,
    version,
    mode: 'native',
    stub_window: opts.window,
    model_auto_compact_token_limit: opts.limit,
  };
  const path = join(RECORDINGS, 'native', `${dirName(spec)}-${version}.json`);
  mkdirSync(dirname(path), { recursive: true });
  const requests = lines(opts.client);
  const forwarded = lines(opts.forwarded);
  const top = Object.entries(head).map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`);
  const tools = Object.entries(toolSets).map(([k, v]) => `    ${JSON.stringify(k)}: ${JSON.stringify(v)}`);
  writeFileSync(
    path,
    `{\n${[...top, `  "tool_sets": {\n${tools.join(',\n')}\n  }`, `  "requests": [\n${requests}\n  ]`, `  "forwarded": [\n${forwarded}\n  ]`].join(',\n')}\n}\n`,
  );
  return path.slice(REPO_ROOT.length + 1);
}

/** The shape with its `tools` skeleton stored once in `toolSets` and named `<tool_set:ID>` (clients resend them). */
function withToolSet(shape: RequestShape, toolSets: Record<string, unknown>): RequestShape {
  const skeleton = shape.body_skeleton as Record<string, unknown> | undefined;
  if (!skeleton || !Array.isArray(skeleton.tools)) return shape;
  const id = createHash('sha256').update(JSON.stringify(skeleton.tools)).digest('hex').slice(0, 12);
  toolSets[id] = skeleton.tools;
  return { ...shape, body_skeleton: { ...skeleton, tools: `<tool_set:${id}>` } };
}

/** Where the planted text sits in a recorded request: a JSON pointer to the string, which paste, where the fact starts. */
export interface Mark {
  path: string;
  /** The turn whose paste this string carries. */
  paste: number;
  /** Offset of the paste's tag in the string (the prompt's one-line preamble comes before it). */
  paste_at: number;
  /** Offset of FACT_SENTENCE in the string, when it carries the fact (turn 1). */
  fact_at?: number;
}

/** What the sidecar forwarded for one recorded client request, as the stub received it. */
export interface ForwardedShape {
  status: number;
  stub_tokens: number;
  compacted: boolean;
  summary_block: boolean;
  fact: boolean;
  whole: number[];
  spilled: number[];
}

export interface LongRequest extends RequestShape {
  turn: number;
  /** The stub's count of the request as the client sent it. */
  direct_tokens: number;
  marks: Mark[];
  forwarded: ForwardedShape[];
}

/** A request that is not a generation call (a `HEAD /` probe, a model list): its shape and its turn. */
export type OtherRequest = RequestShape & { turn: number };

/** One session of a long recording: the client's requests in order, at one window. */
export interface LongSession {
  guardian_window: number;
  stub_window: number;
  turns: number;
  /** The first turn whose client request the stub would have refused sent direct (null: none did). */
  direct_fails_at: number | null;
  requests: (LongRequest | OtherRequest)[];
}

/**
 * A long recording: one client, one or more sessions (one per window it ran at), each with the short format's request
 * fields plus the turn of each request, where the pastes and the fact sit, and what the sidecar forwarded. Each
 * distinct `tools` array is stored once under `tool_sets`, and the body skeleton says `"tools": "<tool_set:ID>"` (a
 * client resends the same tools every turn); {@link inflateTools} puts them back. The file has one request per line.
 */
export interface LongRecording {
  client: string;
  package: string;
  version: string;
  mode: 'long';
  date: string;
  paste_chars: number;
  fact: string;
  fact_token: string;
  tool_sets: Record<string, unknown>;
  sessions: LongSession[];
}

function marksOf(value: unknown, path = ''): Mark[] {
  if (typeof value === 'string') {
    const m = /cg-paste-(\d\d)/.exec(value);
    if (!m) return [];
    const fact = value.indexOf(FACT_SENTENCE);
    const mark: Mark = { path, paste: Number(m[1]), paste_at: value.indexOf(pasteTag(Number(m[1]))) };
    return [fact >= 0 ? { ...mark, fact_at: fact } : mark];
  }
  if (Array.isArray(value)) return value.flatMap((v, i) => marksOf(v, `${path}/${i}`));
  if (value && typeof value === 'object')
    return Object.entries(value as Record<string, unknown>)
      .filter(([k]) => k !== 'tools')
      .flatMap(([k, v]) => marksOf(v, `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`));
  return [];
}

const parse = (rec: TapRecord): unknown => {
  try {
    return rec.body.length ? (JSON.parse(rec.body.toString('utf8')) as unknown) : undefined;
  } catch {
    // Not JSON (a GET, a probe): no marks.
    return undefined;
  }
};

/** Collects a client's long sessions (one per window) and writes them as one recording. */
export class LongRecordingBuilder {
  private readonly toolSets: Record<string, unknown> = {};
  private readonly sessions: LongSession[] = [];

  constructor(
    private readonly spec: ClientSpec,
    private readonly version: string,
  ) {}

  get size(): number {
    return this.sessions.length;
  }

  add(opts: {
    window: number;
    stubWindow: number;
    turns: number;
    directFailsAt: number | undefined;
    tap: readonly TapRecord[];
    turnOf: (index: number) => number;
    clientRequests: readonly ClientRequest[];
    forwarded: readonly Forwarded[];
  }): void {
    const requests = opts.tap.map((rec, i): LongRequest | OtherRequest => {
      const shape = requestShape(rec);
      const skeleton = shape.body_skeleton as Record<string, unknown> | undefined;
      if (skeleton && Array.isArray(skeleton.tools)) {
        const id = createHash('sha256').update(JSON.stringify(skeleton.tools)).digest('hex').slice(0, 12);
        this.toolSets[id] = skeleton.tools;
        skeleton.tools = `<tool_set:${id}>`;
      }
      const c = opts.clientRequests.findIndex((r) => r.tap === rec);
      const req = opts.clientRequests[c];
      if (!req) return { ...shape, turn: opts.turnOf(i) };
      return {
        ...shape,
        turn: req.turn,
        direct_tokens: req.directTokens,
        marks: marksOf(parse(rec)),
        forwarded: opts.forwarded
          .filter((f) => f.client === c)
          .map((f) => ({
            status: f.status,
            stub_tokens: f.tokens,
            compacted: f.compacted,
            summary_block: f.carried.summaryBlock,
            fact: f.carried.fact,
            whole: f.carried.whole,
            spilled: f.carried.spilled,
          })),
      };
    });
    this.sessions.push({
      guardian_window: opts.window,
      stub_window: opts.stubWindow,
      turns: opts.turns,
      direct_fails_at: opts.directFailsAt ?? null,
      requests,
    });
  }

  /** Writes `recordings/long/<client>-<version>.json`; returns its path from the repository root. */
  write(date: string): string {
    const recording: LongRecording = {
      client: this.spec.name,
      package: this.spec.pkg,
      version: this.version,
      mode: 'long',
      date,
      paste_chars: PASTE_CHARS,
      fact: FACT_SENTENCE,
      fact_token: FACT_TOKEN,
      tool_sets: this.toolSets,
      sessions: this.sessions,
    };
    const path = recordingPath(this.spec, this.version, true);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, oneRequestPerLine(recording));
    return path.slice(REPO_ROOT.length + 1);
  }
}

/** JSON with the top level indented and each request (and each tool set) on one line: small, and diffs by request. */
function oneRequestPerLine(r: LongRecording): string {
  const { tool_sets: toolSets, sessions, ...head } = r;
  const top = Object.entries(head).map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`);
  const tools = Object.entries(toolSets).map(([k, v]) => `    ${JSON.stringify(k)}: ${JSON.stringify(v)}`);
  const runs = sessions.map((s) => {
    const { requests, ...meta } = s;
    const fields = Object.entries(meta).map(([k, v]) => `      ${JSON.stringify(k)}: ${JSON.stringify(v)}`);
    const reqs = requests.map((q) => `        ${JSON.stringify(q)}`);
    return `    {\n${[...fields, `      "requests": [\n${reqs.join(',\n')}\n      ]`].join(',\n')}\n    }`;
  });
  return `{\n${[...top, `  "tool_sets": {\n${tools.join(',\n')}\n  }`, `  "sessions": [\n${runs.join(',\n')}\n  ]`].join(',\n')}\n}\n`;
}

/** A long recording's request skeleton with its `tools` put back in place, ready for a replay that rebuilds filler. */
export function inflateTools(recording: { tool_sets: Record<string, unknown> }, skeleton: unknown): unknown {
  if (!skeleton || typeof skeleton !== 'object' || Array.isArray(skeleton)) return skeleton;
  const s = skeleton as Record<string, unknown>;
  const m = typeof s.tools === 'string' ? /^<tool_set:([0-9a-f]+)>$/.exec(s.tools) : null;
  return m ? { ...s, tools: recording.tool_sets[m[1] ?? ''] } : s;
}
