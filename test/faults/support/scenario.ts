import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { verifyArchive } from '@guardian/archive';
import type { StubBackend } from '@guardian/stub-backend';

import { until } from '../../support/wait';
import { presentRefs } from './archive-check';
import { clientsFor, sendTurn, type Outcome } from './drive';
import { Conversation, ROUTES, namedSpanRefs, type Route } from './traffic';

/** One fault: how to start and end it, and what a client may see while it lasts (after it ends: `ok` only). */
export interface FaultSpec {
  name: string;
  on(): Promise<void> | void;
  off(): Promise<void> | void;
  /** Outcomes that count as answered while the fault is on. */
  during: readonly Outcome[];
}

export type Phase = 'before' | 'during' | 'after';

/** Turns per phase: before the fault (building history up to compaction), during it, after it. */
export interface Shape {
  before: number;
  during: number;
  after: number;
  /** Conversations per route and mode. */
  conversations: number;
}

export const SHORT: Shape = { before: 5, during: 3, after: 2, conversations: 1 };
export const LONG: Shape = { before: 5, during: 10, after: 6, conversations: 3 };

/** What guardian counted while one fault ran (deltas of its own metrics): the designed paths, not silence. */
export interface Counted {
  fault: string;
  failOpen: Record<string, number>;
  upstreamError: number;
  archiveDeferred: number;
  /** Memo store errors (Redis down or paused): each one failed open to the local memo. */
  memoErrors: number;
  /** Summariser calls that failed or answered too short (a checkpoint or the client's bytes stood in). */
  summariserFailures: number;
}

/** Reads the counters a fault row reports from guardian's /metrics. */
export async function readCounters(guardianUrl: string): Promise<Omit<Counted, 'fault'>> {
  const text = await (await fetch(`${guardianUrl}/metrics`)).text();
  const out = {
    failOpen: {} as Record<string, number>,
    upstreamError: 0,
    archiveDeferred: 0,
    memoErrors: 0,
    summariserFailures: 0,
  };
  for (const line of text.split('\n')) {
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    const stage = /^guardian_fail_open_total\{stage="([a-z_]+)"\}/.exec(line)?.[1];
    if (stage) out.failOpen[stage] = value;
    if (line.startsWith('guardian_requests_total{') && line.includes('outcome="upstream_error"'))
      out.upstreamError += value;
    if (line.startsWith('guardian_archive_deferred_total ')) out.archiveDeferred = value;
    if (line.startsWith('guardian_memo_errors_total{')) out.memoErrors += value;
    if (/^guardian_summariser_duration_seconds_count\{outcome="(error|short)"\}/.test(line))
      out.summariserFailures += value;
  }
  return out;
}

function delta(before: Omit<Counted, 'fault'>, after: Omit<Counted, 'fault'>, fault: string): Counted {
  const failOpen: Record<string, number> = {};
  for (const [stage, v] of Object.entries(after.failOpen)) {
    const d = v - (before.failOpen[stage] ?? 0);
    if (d > 0) failOpen[stage] = d;
  }
  return {
    fault,
    failOpen,
    upstreamError: after.upstreamError - before.upstreamError,
    archiveDeferred: after.archiveDeferred - before.archiveDeferred,
    memoErrors: after.memoErrors - before.memoErrors,
    summariserFailures: after.summariserFailures - before.summariserFailures,
  };
}

/** One line of the table: a fault on one route, streamed or not. */
export interface Row {
  fault: string;
  route: Route;
  mode: 'json' | 'sse';
  sent: number;
  answered: number;
  outcomes: Map<string, number>;
  /** Span refs the forwarded requests named, with the phase they were first named in. */
  acked: Map<string, Phase>;
  present: number;
  missing: string[];
  /** Messages the client sent that the last forwarded request no longer carried verbatim (compacted away). */
  evicted: number;
  /** Of those, messages found in no span file of the archive: what the archive has lost or not yet written. */
  unarchived: number;
  verify: string;
}

interface Combo {
  route: Route;
  stream: boolean;
  convs: { conv: Conversation; session: string }[];
  row: Row;
}

/**
 * Runs the three routes, streamed and not, through one fault: `before` healthy turns, `during` turns with the fault
 * on, `after` turns with it off, all combos in lockstep (the fault is global). Then reads what the upstream was sent
 * (the span refs guardian's summary blocks named) and what the archive holds.
 */
export async function runFault(
  ctx: { baseURL: string; stub: StubBackend; dataDir: string; seed: number },
  fault: FaultSpec,
  shape: Shape,
): Promise<{ rows: Row[]; counted: Counted }> {
  ctx.stub.reset();
  const countersBefore = await readCounters(ctx.baseURL);
  const clients = clientsFor(ctx.baseURL);
  const combos: Combo[] = [];
  for (const route of ROUTES)
    for (const stream of [false, true]) {
      const mode = stream ? 'sse' : 'json';
      const convs = Array.from({ length: shape.conversations }, (_, c) => ({
        // A model name of the row's own: the summariser's circuit breaker (per model) starts closed in every row.
        conv: new Conversation(
          route,
          ctx.seed * 1000 + combos.length * 10 + c,
          220,
          `stub-model-${fault.name}`,
        ),
        session: `${fault.name}-${route}-${mode}-${c}-${ctx.seed}`,
      }));
      combos.push({
        route,
        stream,
        convs,
        row: {
          fault: fault.name,
          route,
          mode,
          sent: 0,
          answered: 0,
          outcomes: new Map(),
          acked: new Map(),
          present: 0,
          missing: [],
          evicted: 0,
          unarchived: 0,
          verify: '',
        },
      });
    }
  const marks: { phase: Phase; from: number }[] = [];
  let turn = 0;
  const play = async (phase: Phase, turns: number) => {
    marks.push({ phase, from: ctx.stub.requests.length });
    const allowed = phase === 'during' ? fault.during : ['ok'];
    for (let t = 0; t < turns; t++) {
      turn += 1;
      const n = turn;
      await Promise.all(
        combos.flatMap((combo) =>
          combo.convs.map(async ({ conv, session }) => {
            const outcome = await sendTurn(clients, combo.route, conv.body(n, combo.stream), {
              'x-guardian-session': session,
            });
            const row = combo.row;
            row.sent += 1;
            row.outcomes.set(outcome, (row.outcomes.get(outcome) ?? 0) + 1);
            if (allowed.includes(outcome)) row.answered += 1;
          }),
        ),
      );
    }
  };
  await play('before', shape.before);
  await fault.on();
  try {
    await play('during', shape.during);
  } finally {
    await fault.off();
  }
  await play('after', shape.after);
  // Span commits, log lines and receipts are written behind the answers: the archive is read once the sidecar says
  // none is still running (every one was started before its answer ended, so none can start after this).
  await until('the writes behind the answers', async () => {
    const stats = (await (await fetch(`${ctx.baseURL}/guardian/stats`)).json()) as { behind?: unknown };
    return stats.behind === 0;
  });
  const counted = delta(countersBefore, await readCounters(ctx.baseURL), fault.name);
  const spanDir = join(ctx.dataDir, 'spans');
  const verdict = await verifyArchive({ spanDir }).then(
    (v) =>
      v.ok
        ? `OK (${v.runs.length} runs)`
        : `BREAK ${v.runs
            .filter((r) => r.status === 'break')
            .map((r) => r.break?.kind)
            .join(',')}`,
    (err: unknown) => `n/a (${err instanceof Error ? err.message : String(err)})`,
  );
  const requests = ctx.stub.requests;
  const archived = await archiveText(spanDir);
  for (const combo of combos) {
    for (const { conv } of combo.convs) {
      const marker = `conversation ${conv.seed}.`;
      const last = [...requests]
        .reverse()
        .find((r) => !r.isSummary && r.route !== 'window' && r.body.toString('utf8').includes(marker));
      const forwarded = last?.body.toString('utf8') ?? '';
      for (const text of conv.texts(turn)) {
        if (forwarded.includes(text)) continue;
        combo.row.evicted += 1;
        if (!archived.includes(text)) combo.row.unarchived += 1;
      }
    }
    const seeds = combo.convs.map(({ conv }) => `conversation ${conv.seed}.`);
    requests.forEach((r, i) => {
      if (r.isSummary || !['chat', 'messages', 'responses'].includes(r.route)) return;
      const text = r.body.toString('utf8');
      if (!seeds.some((s) => text.includes(s))) return;
      const phase = [...marks].reverse().find((m) => i >= m.from)?.phase ?? 'before';
      for (const ref of namedSpanRefs(text)) if (!combo.row.acked.has(ref)) combo.row.acked.set(ref, phase);
    });
    const { present, missing } = await presentRefs(spanDir, combo.row.acked.keys());
    combo.row.present = present.length;
    combo.row.missing = missing;
    combo.row.verify = verdict;
  }
  return { rows: combos.map((c) => c.row), counted };
}

/** Per fault: what guardian counted (fail-open by stage, upstream errors, deferred spans). */
export function formatCounted(counted: Counted[]): string {
  const lines = counted.map((c) => {
    const stages = Object.entries(c.failOpen).map(([k, v]) => `${k} ${v}`);
    return `${c.fault.padEnd(18)}fail_open ${stages.length ? stages.join(', ') : '0'}; upstream_error ${c.upstreamError}; archive_deferred ${c.archiveDeferred}; memo_errors ${c.memoErrors}; summariser_failures ${c.summariserFailures}`;
  });
  return ['counted by guardian while each fault ran:', ...lines].join('\n');
}

/** Every span file's text, joined: a message is archived when its text is in one (spans keep messages verbatim). */
async function archiveText(spanDir: string): Promise<string> {
  const parts: string[] = [];
  const runs = await readdir(spanDir).catch(() => [] as string[]);
  for (const run of runs) {
    const files = await readdir(join(spanDir, run)).catch(() => [] as string[]);
    for (const f of files)
      if (/^\d{4,}\.json$/.test(f)) parts.push(await readFile(join(spanDir, run, f), 'utf8').catch(() => ''));
  }
  return parts.join('\n');
}

/** The fault × route × outcome table, one line per row. */
export function formatTable(rows: Row[]): string {
  const head = [
    'fault',
    'route',
    'mode',
    'sent',
    'answered',
    'outcomes',
    'acked',
    'present',
    'evicted',
    'unarchived',
    'verify',
  ];
  const lines = rows.map((r) => [
    r.fault,
    r.route,
    r.mode,
    String(r.sent),
    String(r.answered),
    [...r.outcomes].map(([k, v]) => `${k} ${v}`).join(', '),
    String(r.acked.size),
    String(r.present),
    String(r.evicted),
    String(r.unarchived),
    r.verify,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cols: string[]) =>
    cols
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [fmt(head), ...lines.map(fmt)].join('\n');
}
