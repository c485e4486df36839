/**
 * Topology (a): clients -> guardian -> LiteLLM -> backend. Guardian's upstream is the LiteLLM proxy: it learns the
 * window from LiteLLM's `/model/info`, compacts, and reads LiteLLM's own refusal (which wraps the backend's) when
 * a request it believed fitting is refused.
 */
import { join } from 'node:path';

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

import {
  conversationRequests,
  conversationRows,
  eventsOf,
  usageRow,
  type LitellmRun,
} from './litellm-checks';
import { chatSession, evenButLast, filler, messagesSession } from './litellm-session';
import { check, type Row } from './report';
import { startSidecar, type Sidecar } from './sidecar';
import { startTap } from './tap';

const LABEL = 'LiteLLM (a) guardian in front';
/** The model group that routes straight to the vLLM-like stub. */
export const DIRECT = 'direct';
/** The model group that routes to the llama.cpp-like stub through LiteLLM's generic `openai/` provider. */
export const LLAMA_DIRECT = 'llama-direct';

async function sidecarOnLitellm(run: LitellmRun, name: string, env: Record<string, string> = {}) {
  const tap = await startTap(run.litellm.url);
  const sidecar = await startSidecar({
    upstreamUrl: `${tap.url}/v1`,
    dataDir: join(run.work, `data-${name}`),
    logPath: join(run.work, `sidecar-${name}.log`),
    env,
  });
  return { tap, sidecar };
}

export async function frontRows(run: LitellmRun): Promise<Row[]> {
  const v = run.litellm.version;
  const rows: Row[] = [];
  const { tap, sidecar } = await sidecarOnLitellm(run, 'front');
  try {
    const from = run.stub.requests.length;
    const turns = await chatSession({
      baseURL: `${sidecar.url}/v1`,
      apiKey: run.masterKey,
      model: DIRECT,
      turns: 30,
      chars: 4000,
      stream: evenButLast(30),
      headers: { 'X-Guardian-Session': 'front-chat' },
    });
    const stats = await sidecar.stats();
    const w = (stats.windows as Record<string, { window: number; source: string }> | undefined)?.[DIRECT];
    const info = tap.records.filter((r) => r.url.startsWith('/model/info'));
    rows.push(
      check(
        `${LABEL}: window`,
        v,
        w?.source === 'detected:litellm' &&
          w.window === run.stub.window &&
          info.some((r) => r.status === 200),
        `window ${JSON.stringify(w)}, backend ${run.stub.window}, /model/info statuses ${JSON.stringify(info.map((r) => r.status))}`,
        `${String(w?.window)} from ${String(w?.source)} (LiteLLM's /model/info max_input_tokens, which LiteLLM read from the backend's max_model_len ${run.stub.window})`,
      ),
    );
    const forwarded = conversationRequests(run.stub, from);
    const compactions = sidecar.logLines().length;
    rows.push(
      ...conversationRows({
        label: `${LABEL}, chat`,
        version: v,
        turns,
        compactions,
        forwarded,
        directRefusedAt: run.directRefusedAt,
      }),
    );
    rows.push(
      await usageRow({
        label: `${LABEL}, chat`,
        version: v,
        sidecar,
        session: 'front-chat',
        turns,
        backendCount: forwarded[forwarded.length - 1]?.promptTokens,
      }),
    );
    rows.push(await messagesRow(run, sidecar));
  } finally {
    await sidecar.stop();
    await tap.close();
  }
  rows.push(...(await overflowRows(run)));
  return rows;
}

/** `/v1/messages` with the Anthropic SDK: LiteLLM serves it (translating to chat for an OpenAI-compatible backend). */
async function messagesRow(run: LitellmRun, sidecar: Sidecar): Promise<Row> {
  const before = sidecar.logLines().length;
  const from = run.stub.requests.length;
  const turns = await messagesSession({
    baseURL: sidecar.url,
    apiKey: run.masterKey,
    model: DIRECT,
    turns: 20,
    chars: 4000,
    stream: evenButLast(20),
    headers: { 'X-Guardian-Session': 'front-messages' },
  });
  const lines = sidecar.logLines().slice(before);
  const onMessages = lines.filter((l) => String(l.route).includes('messages')).length;
  const forwarded = conversationRequests(run.stub, from);
  const failed = turns.find((t) => !t.ok);
  const streamed = turns.filter((t) => t.streamed);
  return check(
    `${LABEL}, /v1/messages: compaction and streaming`,
    run.litellm.version,
    !failed && onMessages >= 1 && streamed.every((t) => t.chunks > 1),
    failed
      ? `turn ${failed.turn} refused (${String(failed.status)}): ${failed.error ?? ''}`
      : 'never compacted',
    `${turns.length - (failed ? 1 : 0)}/${turns.length} answered (Anthropic SDK, ${streamed.length} streamed); ` +
      `compactions on /v1/messages ${onMessages}; LiteLLM sent the backend ${forwarded.length} chat requests`,
  );
}

/**
 * Guardian believes the window is 65,536 (GUARDIAN_NUM_CTX) while the backend holds 16,384: a request that fits
 * for guardian is refused behind LiteLLM, and LiteLLM answers with its own error wrapping the backend's. One
 * request per route and backend; each must be answered after exactly one retry.
 */
async function overflowRows(run: LitellmRun): Promise<Row[]> {
  const rows: Row[] = [];
  const history = Array.from({ length: 20 }, (_v, i) => [
    { role: 'user' as const, content: `Note ${i}. ${filler(900 + i, 4000)}` },
    { role: 'assistant' as const, content: `Noted ${i}.` },
  ]).flat();
  const cases: { name: string; model: string; send: (url: string) => Promise<unknown> }[] = [
    {
      name: 'chat, vLLM behind',
      model: DIRECT,
      send: (url) =>
        new OpenAI({ baseURL: `${url}/v1`, apiKey: run.masterKey, maxRetries: 0 }).chat.completions.create({
          model: DIRECT,
          max_tokens: 16,
          messages: [...history, { role: 'user', content: 'Reply with one word.' }],
        }),
    },
    {
      name: '/v1/messages, vLLM behind',
      model: DIRECT,
      send: (url) =>
        new Anthropic({ baseURL: url, apiKey: run.masterKey, maxRetries: 0 }).messages.create({
          model: DIRECT,
          max_tokens: 16,
          messages: [...history, { role: 'user', content: 'Reply with one word.' }],
        }),
    },
    {
      name: 'chat, llama.cpp behind',
      model: LLAMA_DIRECT,
      send: (url) =>
        new OpenAI({ baseURL: `${url}/v1`, apiKey: run.masterKey, maxRetries: 0 }).chat.completions.create({
          model: LLAMA_DIRECT,
          max_tokens: 16,
          messages: [...history, { role: 'user', content: 'Reply with one word.' }],
        }),
    },
  ];
  // A sidecar per case: a refusal teaches guardian the model's real window, and the next case would then be
  // compacted before LiteLLM ever refused it.
  for (const [i, c] of cases.entries()) {
    const { tap, sidecar } = await sidecarOnLitellm(run, `front-overflow-${i}`, {
      GUARDIAN_NUM_CTX: '65536',
    });
    try {
      const seen = tap.records.length;
      const eventsBefore = (await eventsOf(sidecar)).length;
      let failure = '';
      try {
        await c.send(sidecar.url);
      } catch (err) {
        failure = `client got ${err instanceof Error ? err.message.slice(0, 160) : String(err)}`;
      }
      const calls = tap.records.slice(seen).filter((r) => r.method === 'POST' && !r.url.startsWith('/model'));
      const refusals = calls.filter((r) => r.status === 400);
      const events = (await eventsOf(sidecar)).slice(eventsBefore);
      const recovered = events.find((e) => e.kind === 'overflow_recovered');
      // The window guardian took from LiteLLM's refusal text: proof that it read the numbers, not only the shape.
      const windows = (await sidecar.stats()).windows as Record<string, { window: number; source: string }>;
      const learned = windows[c.model];
      rows.push(
        check(
          `${LABEL}: overflow recovery (${c.name})`,
          run.litellm.version,
          !failure &&
            refusals.length === 1 &&
            recovered?.shape === 'litellm' &&
            learned?.window === run.stub.window,
          failure ||
            `refusals ${refusals.length}, recovered ${JSON.stringify(recovered)}, window now ${JSON.stringify(learned)}`,
          `calls to LiteLLM ${JSON.stringify(calls.map((r) => `${r.url.split('?')[0]} ${r.status}`))}; the refusal read as ` +
            `shape ${String(recovered?.shape)}, window ${String(learned?.window)} (${String(learned?.source)}); ` +
            `tokens ${String(recovered?.tokens_before)} -> ${String(recovered?.tokens_after)}`,
        ),
      );
    } finally {
      await sidecar.stop();
      await tap.close();
    }
  }
  return rows;
}
