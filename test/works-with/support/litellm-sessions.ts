/**
 * Per-developer sessions behind LiteLLM (topology b, docs/sessions.md "Behind LiteLLM"): two developers, each with
 * a LiteLLM key of their own, send `X-Guardian-Session` (and the future team-mode `X-Guardian-Token`) to LiteLLM;
 * with `forward_client_headers_to_llm_api` for the model group, LiteLLM passes both on to guardian, never the
 * developers' keys. Without the setting (the default) the header never reaches guardian.
 */
import { randomBytes } from 'node:crypto';

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

import type { Behind } from './litellm-behind';
import { GUARDED, GUARDED_OVERFLOW, GUARDED_PLAIN } from './litellm-behind';
import { conversationRequests, usageOf, type LitellmRun } from './litellm-checks';
import { chatSession, type Turn } from './litellm-session';
import { check, type Row } from './report';

const LABEL = 'LiteLLM (b) sessions';

export interface Developer {
  name: string;
  key: string;
  token: string;
}

/** Two developers' keys and (team-mode) tokens, fresh for each run: nothing of a real deployment. */
export function developers(): Developer[] {
  return ['alice', 'bob'].map((name) => ({
    name,
    key: `sk-${name}-${randomBytes(12).toString('hex')}`,
    token: `cg-${name}-${randomBytes(12).toString('hex')}`,
  }));
}

const headersOf = (d: Developer): Record<string, string> => ({
  'X-Guardian-Session': d.name,
  'X-Guardian-Token': d.token,
});

export async function sessionRows(run: LitellmRun, b: Behind, devs: Developer[]): Promise<Row[]> {
  const v = run.litellm.version;
  const seen = b.tap.records.length;
  const stubFrom = run.stub.requests.length;
  // The header on /v1/messages too, which LiteLLM translates to chat for guardian (first, so that each
  // developer's usage then follows their chat conversation).
  const alice = devs[0]!;
  const viaMessages = await new Anthropic({
    baseURL: run.litellm.url,
    apiKey: alice.key,
    defaultHeaders: headersOf(alice),
    maxRetries: 0,
  }).messages
    .create({ model: GUARDED, max_tokens: 32, messages: [{ role: 'user', content: 'One word, please.' }] })
    .then(
      () => true,
      () => false,
    );
  // Both at once, as two developers work: their requests interleave at LiteLLM and at guardian.
  const sessions = await Promise.all(
    devs.map((d, i) =>
      chatSession({
        baseURL: `${run.litellm.url}/v1`,
        apiKey: d.key,
        model: GUARDED,
        turns: 8,
        chars: 2000 + 1500 * i,
        stream: (t) => t === 4,
        headers: headersOf(d),
        seed: 300 * (i + 1),
      }),
    ),
  );
  const arrived = b.tap.records.slice(seen).filter((r) => r.method === 'POST');
  const keysSeen = arrived.filter((r) =>
    devs.some((d) => Object.values(r.headers).some((h) => String(h).includes(d.key))),
  ).length;
  const bySession = (d: Developer) => arrived.filter((r) => r.headers['x-guardian-session'] === d.name);
  const withToken = (d: Developer) => bySession(d).filter((r) => r.headers['x-guardian-token'] === d.token);
  const leaked = conversationRequests(run.stub, stubFrom).filter((r) =>
    Object.keys(r.headers).some((h) => h.startsWith('x-guardian-')),
  ).length;
  const usages = await Promise.all(devs.map((d) => usageOf(b.sidecar, d.name)));
  const rows: Row[] = [];
  const expected = devs.map((_d, i) => sessions[i]!.length + (i === 0 ? 1 : 0));
  rows.push(
    check(
      `${LABEL}: header and token reach guardian`,
      v,
      devs.every((d, i) => bySession(d).length === expected[i] && withToken(d).length === expected[i]) &&
        keysSeen === 0 &&
        leaked === 0 &&
        viaMessages &&
        sessions.every((s) => s.every((t) => t.ok)),
      `arrived with the session ${JSON.stringify(devs.map((d) => bySession(d).length))} of ${JSON.stringify(expected)}, ` +
        `with the token ${JSON.stringify(devs.map((d) => withToken(d).length))}; requests carrying a developer key ${keysSeen}; ` +
        `forwarded to the backend with an X-Guardian-* header ${leaked}`,
      `${devs.map((d, i) => `${d.name}: ${bySession(d).length}/${expected[i]} requests with X-Guardian-Session and X-Guardian-Token`).join(', ')} ` +
        `(chat, one streamed, and one /v1/messages for alice); no developer key reached guardian; guardian passed no X-Guardian-* header on`,
    ),
  );
  const lastPrompt = (turns: Turn[]) =>
    [...turns].reverse().find((t) => t.promptTokens !== undefined)?.promptTokens;
  rows.push(
    check(
      `${LABEL}: each developer's own usage`,
      v,
      devs.every((_d, i) => usages[i] !== undefined) &&
        usages[0]?.used_after_compaction !== usages[1]?.used_after_compaction &&
        devs.every((_d, i) => usages[i]?.used_after_compaction === lastPrompt(sessions[i]!)),
      `usage ${JSON.stringify(usages.map((u) => u?.used_after_compaction))}, last answers ${JSON.stringify(sessions.map(lastPrompt))}`,
      devs
        .map(
          (d, i) => `/guardian/usage?session=${d.name}: ${String(usages[i]?.used_after_compaction)} tokens`,
        )
        .join(', ') +
        `, each = that developer's last answer's usage ${JSON.stringify(sessions.map(lastPrompt))}`,
    ),
    await withoutForwarding(run, b, alice),
    await headerRequired(run, b),
  );
  return rows;
}

/**
 * GUARDIAN_SESSION_HEADER_REQUIRED behind LiteLLM: a developer whose client sends no header gets guardian's 400 with
 * its reason, as LiteLLM relays it, and nothing reaches the backend.
 */
async function headerRequired(run: LitellmRun, b: Behind): Promise<Row> {
  const from = run.stub.requests.length;
  const before = Number((await b.overflow.stats()).compactions_performed ?? 0);
  let status: number | undefined;
  let message = '';
  try {
    await new OpenAI({
      baseURL: `${run.litellm.url}/v1`,
      apiKey: run.masterKey,
      maxRetries: 0,
    }).chat.completions.create({
      model: GUARDED_OVERFLOW,
      max_tokens: 32,
      messages: [{ role: 'user', content: 'Hi.' }],
    });
  } catch (err) {
    status = err instanceof OpenAI.APIError ? err.status : undefined;
    message = err instanceof Error ? err.message : String(err);
  }
  const reached = conversationRequests(run.stub, from).length;
  const after = Number((await b.overflow.stats()).compactions_performed ?? 0);
  return check(
    `${LABEL}: header required, refused with its reason`,
    run.litellm.version,
    status === 400 &&
      message.includes('GUARDIAN_SESSION_REQUIRED') &&
      message.includes('X-Guardian-Session') &&
      reached === 0,
    `client got ${String(status)}: ${message.slice(0, 200)}; backend reached ${reached} times`,
    `without X-Guardian-Session, guardian (GUARDIAN_SESSION_HEADER_REQUIRED=1) refused with 400 and LiteLLM relayed it ` +
      `as ${String(status)} with guardian's code and message inside its own ("${message.slice(0, 150)}..."); the backend saw ` +
      `nothing (compactions ${after - before})`,
  );
}

/** The control: a model group without `forward_client_headers_to_llm_api` drops the header (LiteLLM's default). */
async function withoutForwarding(run: LitellmRun, b: Behind, d: Developer): Promise<Row> {
  const seen = b.tap.records.length;
  let failure = '';
  try {
    await new OpenAI({
      baseURL: `${run.litellm.url}/v1`,
      apiKey: d.key,
      defaultHeaders: headersOf(d),
      maxRetries: 0,
    }).chat.completions.create({
      model: GUARDED_PLAIN,
      max_tokens: 16,
      messages: [{ role: 'user', content: 'Hi.' }],
    });
  } catch (err) {
    failure = err instanceof Error ? err.message.slice(0, 160) : String(err);
  }
  const arrived = b.tap.records.slice(seen).filter((r) => r.method === 'POST');
  const carried = arrived.filter((r) => r.headers['x-guardian-session'] !== undefined).length;
  return check(
    `${LABEL}: LiteLLM's default drops the header`,
    run.litellm.version,
    !failure && arrived.length === 1 && carried === 0,
    failure || `${carried} of ${arrived.length} requests carried X-Guardian-Session without forwarding`,
    `a model group without forward_client_headers_to_llm_api: answered, and guardian saw no X-Guardian-Session (so it derived the session)`,
  );
}
