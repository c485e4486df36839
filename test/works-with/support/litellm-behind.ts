/**
 * Topology (b): clients -> LiteLLM -> guardian -> backend. LiteLLM's `api_base` for a model group is guardian; the
 * clients hold LiteLLM keys and never see guardian. Guardian learns the window from the backend itself, compacts
 * what LiteLLM sends it (chat completions, also for clients that spoke `/v1/messages` to LiteLLM), and recovers an
 * overflow before LiteLLM sees it.
 */
import { join } from 'node:path';

import OpenAI from 'openai';

import type { LitellmModel } from './litellm';
import { conversationRequests, conversationRows, usageRow, type LitellmRun } from './litellm-checks';
import { chatSession, evenButLast, filler, messagesSession } from './litellm-session';
import { check, type Row } from './report';
import { startSidecar, type Sidecar } from './sidecar';
import { startTap, type Tap } from './tap';

const LABEL = 'LiteLLM (b) guardian behind';
/** Model groups LiteLLM routes to guardian: with client-header forwarding, without it, and to the overflow sidecar. */
export const GUARDED = 'guarded';
export const GUARDED_PLAIN = 'guarded-plain';
export const GUARDED_OVERFLOW = 'guarded-overflow';

export interface Behind {
  /** Between LiteLLM and guardian: what LiteLLM sends guardian, headers included. */
  tap: Tap;
  sidecar: Sidecar;
  /**
   * Believes the window is 65,536 (GUARDIAN_NUM_CTX), so the backend refuses what it forwards; and requires the
   * session header (GUARDIAN_SESSION_HEADER_REQUIRED), to show what a developer without one sees through LiteLLM.
   */
  overflow: Sidecar;
  /** The model groups LiteLLM needs, and those whose `x-*` client headers it forwards. */
  models: LitellmModel[];
  forwardHeadersFor: string[];
}

/** Guardian and its tap must listen before LiteLLM starts: its config names them. */
export async function startBehind(o: { stubUrl: string; work: string }): Promise<Behind> {
  const sidecar = await startSidecar({
    upstreamUrl: `${o.stubUrl}/v1`,
    dataDir: join(o.work, 'data-behind'),
    logPath: join(o.work, 'sidecar-behind.log'),
  });
  const tap = await startTap(sidecar.url);
  const overflow = await startSidecar({
    upstreamUrl: `${o.stubUrl}/v1`,
    dataDir: join(o.work, 'data-behind-overflow'),
    logPath: join(o.work, 'sidecar-behind-overflow.log'),
    env: { GUARDIAN_NUM_CTX: '65536', GUARDIAN_SESSION_HEADER_REQUIRED: '1' },
  });
  // `hosted_vllm/` is LiteLLM's provider for a vLLM server, which is what guardian looks like from LiteLLM.
  const model = 'hosted_vllm/stub-model';
  return {
    tap,
    sidecar,
    overflow,
    models: [
      { name: GUARDED, model, apiBase: `${tap.url}/v1` },
      { name: GUARDED_PLAIN, model, apiBase: `${tap.url}/v1` },
      { name: GUARDED_OVERFLOW, model, apiBase: `${overflow.url}/v1` },
    ],
    forwardHeadersFor: [GUARDED, GUARDED_OVERFLOW],
  };
}

export async function stopBehind(b: Behind): Promise<void> {
  await b.overflow.stop();
  await b.tap.close();
  await b.sidecar.stop();
}

export async function behindRows(run: LitellmRun, b: Behind): Promise<Row[]> {
  const v = run.litellm.version;
  const rows: Row[] = [];
  const from = run.stub.requests.length;
  const linesBefore = b.sidecar.logLines().length;
  const turns = await chatSession({
    baseURL: `${run.litellm.url}/v1`,
    apiKey: run.masterKey,
    model: GUARDED,
    turns: 30,
    chars: 4000,
    stream: evenButLast(30),
    headers: { 'X-Guardian-Session': 'behind-chat' },
  });
  const stats = await b.sidecar.stats();
  const w = (stats.windows as Record<string, { window: number; source: string }> | undefined)?.['stub-model'];
  const info = await modelInfo(run, GUARDED);
  rows.push(
    check(
      `${LABEL}: window`,
      v,
      w?.source === 'detected:vllm' && w.window === run.stub.window && info === run.stub.window,
      `guardian ${JSON.stringify(w)}, LiteLLM /model/info max_input_tokens ${String(info)}, backend ${run.stub.window}`,
      `guardian: ${String(w?.window)} from ${String(w?.source)} (the backend's max_model_len); LiteLLM's /model/info ` +
        `for ${GUARDED}: ${String(info)}, read through guardian's forwarded GET /v1/models`,
    ),
  );
  const forwarded = conversationRequests(run.stub, from);
  rows.push(
    ...conversationRows({
      label: `${LABEL}, chat`,
      version: v,
      turns,
      compactions: b.sidecar.logLines().length - linesBefore,
      forwarded,
      directRefusedAt: run.directRefusedAt,
    }),
    await usageRow({
      label: `${LABEL}, chat`,
      version: v,
      sidecar: b.sidecar,
      session: 'behind-chat',
      turns,
      backendCount: forwarded[forwarded.length - 1]?.promptTokens,
    }),
    await messagesRow(run, b),
    await overflowRow(run, b),
  );
  return rows;
}

/** What LiteLLM's `/model/info` says the model group's input window is. */
async function modelInfo(run: LitellmRun, group: string): Promise<number | undefined> {
  const res = await fetch(`${run.litellm.url}/model/info`, {
    headers: { authorization: `Bearer ${run.masterKey}` },
  });
  const body = (await res.json()) as {
    data?: { model_name: string; model_info?: { max_input_tokens?: number } }[];
  };
  return body.data?.find((m) => m.model_name === group)?.model_info?.max_input_tokens;
}

/** Anthropic SDK on LiteLLM's `/v1/messages`: LiteLLM translates it to chat completions for guardian. */
async function messagesRow(run: LitellmRun, b: Behind): Promise<Row> {
  const before = b.sidecar.logLines().length;
  const seen = b.tap.records.length;
  const turns = await messagesSession({
    baseURL: run.litellm.url,
    apiKey: run.masterKey,
    model: GUARDED,
    turns: 20,
    chars: 4000,
    stream: evenButLast(20),
    headers: { 'X-Guardian-Session': 'behind-messages' },
  });
  const lines = b.sidecar.logLines().slice(before);
  const routes = [...new Set(b.tap.records.slice(seen).map((r) => `${r.method} ${r.url.split('?')[0]}`))];
  const failed = turns.find((t) => !t.ok);
  const streamed = turns.filter((t) => t.streamed);
  return check(
    `${LABEL}, /v1/messages: compaction and streaming`,
    run.litellm.version,
    !failed && lines.length >= 1 && streamed.every((t) => t.chunks > 1),
    failed
      ? `turn ${failed.turn} refused (${String(failed.status)}): ${failed.error ?? ''}`
      : 'never compacted',
    `${turns.filter((t) => t.ok).length}/${turns.length} answered (Anthropic SDK to LiteLLM, ${streamed.length} streamed); ` +
      `LiteLLM sent guardian ${JSON.stringify(routes)}; guardian compacted ${lines.length} of them (route ${JSON.stringify([...new Set(lines.map((l) => l.route))])})`,
  );
}

/** The backend refuses what guardian forwarded; guardian retries once, and LiteLLM (and its client) see a 200. */
async function overflowRow(run: LitellmRun, b: Behind): Promise<Row> {
  const from = run.stub.requests.length;
  const history = Array.from({ length: 20 }, (_v, i) => [
    { role: 'user' as const, content: `Note ${i}. ${filler(900 + i, 4000)}` },
    { role: 'assistant' as const, content: `Noted ${i}.` },
  ]).flat();
  let failure = '';
  try {
    await new OpenAI({
      baseURL: `${run.litellm.url}/v1`,
      apiKey: run.masterKey,
      defaultHeaders: { 'X-Guardian-Session': 'behind-overflow' },
      maxRetries: 0,
    }).chat.completions.create({
      model: GUARDED_OVERFLOW,
      max_tokens: 16,
      messages: [...history, { role: 'user', content: 'Reply with one word.' }],
    });
  } catch (err) {
    failure = `client got ${err instanceof Error ? err.message.slice(0, 160) : String(err)}`;
  }
  const calls = conversationRequests(run.stub, from);
  const stats = await b.overflow.stats();
  const recovered = Number(stats.overflow_recovered ?? 0);
  const statuses = calls.map((r) => r.status);
  return check(
    `${LABEL}: overflow recovery`,
    run.litellm.version,
    !failure && statuses.filter((s) => s === 400).length === 1 && recovered === 1,
    failure || `backend statuses ${JSON.stringify(statuses)}, overflow_recovered ${recovered}`,
    `backend answered ${JSON.stringify(statuses)} (vLLM's own refusal, then the retry); overflow_recovered ${recovered}; ` +
      'LiteLLM saw one 200 and its client the answer',
  );
}
