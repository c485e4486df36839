import { ARCHIVE_FENCE } from '@guardian/compaction';
import type { RecordedRequest, StubBackend } from '@guardian/stub-backend';

import type { Litellm } from './litellm';
import { answered, firstRefused, type Turn } from './litellm-session';
import { check, type Row } from './report';
import type { Sidecar } from './sidecar';

/** Shared by both topologies: the backends, the proxy and the keys of one run. */
export interface LitellmRun {
  /** vLLM-like stub: discovery (`max_model_len`), `/tokenize`, vLLM's overflow body. */
  stub: StubBackend;
  /** llama.cpp-like stub, for LiteLLM's wrap of llama.cpp's overflow answer. */
  llamaStub: StubBackend;
  litellm: Litellm;
  /** The venv LiteLLM runs from (the deploy-file check starts two more). */
  venv: string;
  masterKey: string;
  work: string;
  /** Turn at which the same chat session sent straight to LiteLLM (no guardian) was first refused. */
  directRefusedAt?: number;
}

const SUMMARY_MARK = `<<<${ARCHIVE_FENCE}`;

/** The conversation requests the stub answered since `from` (summariser calls and discovery left out), in order. */
export function conversationRequests(stub: StubBackend, from: number): RecordedRequest[] {
  return stub.requests.slice(from).filter((r) => r.route !== 'window' && isGeneration(r) && !r.isSummary);
}

const isGeneration = (r: RecordedRequest): boolean =>
  r.method === 'POST' && (r.route === 'chat' || r.route === 'messages');

/** True when guardian's summary block is in what reached the backend: that turn was compacted on its way. */
export const carriesSummary = (r: RecordedRequest): boolean => r.body.toString('utf8').includes(SUMMARY_MARK);

export async function usageOf(
  sidecar: Sidecar,
  session: string,
): Promise<Record<string, unknown> | undefined> {
  const res = await fetch(`${sidecar.url}/guardian/usage?session=${encodeURIComponent(session)}`);
  return res.ok ? ((await res.json()) as Record<string, unknown>) : undefined;
}

export async function eventsOf(sidecar: Sidecar): Promise<Record<string, unknown>[]> {
  const res = await fetch(`${sidecar.url}/guardian/events`);
  const body = (await res.json()) as { events?: Record<string, unknown>[] };
  return body.events ?? [];
}

/** The rows every topology shares: the conversation answered and compacted, and its streamed turns. */
export function conversationRows(o: {
  label: string;
  version: string;
  turns: Turn[];
  compactions: number;
  forwarded: RecordedRequest[];
  directRefusedAt?: number;
}): Row[] {
  const { turns } = o;
  const streamed = turns.filter((t) => t.streamed);
  const compactedStreamed = streamed.filter((t) => {
    const r = o.forwarded[t.turn - 1];
    return r !== undefined && carriesSummary(r);
  });
  const failed = turns.find((t) => !t.ok);
  return [
    check(
      `${o.label}: compaction`,
      o.version,
      answered(turns) === turns.length && o.compactions >= 1 && o.directRefusedAt !== undefined,
      failed
        ? `turn ${failed.turn} refused (${String(failed.status)}): ${failed.error ?? ''}`
        : o.directRefusedAt === undefined
          ? 'the session fits the window even without guardian: nothing proven'
          : 'answered but never compacted',
      `${answered(turns)}/${turns.length} answered; straight to LiteLLM refused from turn ${String(o.directRefusedAt)}; ` +
        `compactions ${o.compactions}; ${o.forwarded.filter(carriesSummary).length} of ${o.forwarded.length} forwarded turns carried the summary`,
    ),
    check(
      `${o.label}: streaming`,
      o.version,
      streamed.length > 0 &&
        streamed.every((t) => t.ok && t.chunks > 1) &&
        compactedStreamed.length > 0 &&
        o.forwarded.every((r) => r.status === 200),
      streamed.length === 0
        ? 'no streamed turn'
        : compactedStreamed.length === 0
          ? 'no streamed turn was compacted'
          : `streamed turns: ${streamed.map((t) => `${t.turn}:${t.ok ? t.chunks : 'refused'}`).join(' ')}`,
      `${streamed.length} streamed turns, each in ${Math.min(...streamed.map((t) => t.chunks))}+ content chunks; ` +
        `${compactedStreamed.length} of them compacted`,
    ),
  ];
}

/** The session's `/guardian/usage` shows the backend's own count of the last request, as its answer reported it. */
export async function usageRow(o: {
  label: string;
  version: string;
  sidecar: Sidecar;
  session: string;
  turns: Turn[];
  backendCount?: number;
}): Promise<Row> {
  const usage = await usageOf(o.sidecar, o.session);
  const last = o.turns[o.turns.length - 1];
  const lines = o.sidecar.logLines();
  const sources = lines.map((l) => String(l.count_source));
  const used = usage?.used_after_compaction;
  const ok =
    usage !== undefined &&
    last?.promptTokens !== undefined &&
    used === last.promptTokens &&
    (o.backendCount === undefined || used === o.backendCount) &&
    sources.slice(-1).some((s) => s === 'calibrated' || s.startsWith('tokenize'));
  return check(
    `${o.label}: usage calibration`,
    o.version,
    ok,
    usage === undefined
      ? `no /guardian/usage for session ${o.session}`
      : `usage ${String(used)} (${String(usage.count_source)}), last answer said ${String(last?.promptTokens)}, ` +
          `backend counted ${String(o.backendCount)}, log count_source ${JSON.stringify(sources)}`,
    `/guardian/usage ${String(used)} tokens (${String(usage?.pct)}% of ${String(usage?.window)}) = the last answer's ` +
      `usage ${String(last?.promptTokens)} = the backend's count ${String(o.backendCount)}; compactions decided on ` +
      `${JSON.stringify(countBy(sources))}`,
  );
}

function countBy(values: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}

export { answered, firstRefused };
