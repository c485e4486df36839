import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

import { MUST_COME_MS } from '../../support/wait';
import type { Route } from './traffic';

/**
 * What the client saw, as the official SDK reports it (no retries, so one request is one outcome):
 * `ok` a whole answer; `http <status>` an error answer; `broken` an answer that started and then failed;
 * `connection` no answer at all; `malformed` an answer the SDK could not parse; `hung` nothing within the client's
 * hang guard (MUST_COME_MS), which no fault may cause: the sidecar's own timeouts end every wait long before.
 */
export type Outcome = 'ok' | 'broken' | 'connection' | 'malformed' | 'hung' | `http ${number}`;

export interface Clients {
  openai: OpenAI;
  anthropic: Anthropic;
}

export function clientsFor(baseURL: string, headers: Record<string, string> = {}): Clients {
  // The client's timeout is a hang guard, never a verdict: the sidecar's own timeouts (GUARDIAN_UPSTREAM_TIMEOUT) are
  // what is under test, and a busy machine must not make a slow answer count as a failure (issue 30 item 9).
  // logLevel off: the SDKs log a malformed event they cannot parse, which the malformed-answer fault sends on purpose.
  const common = { maxRetries: 0, timeout: MUST_COME_MS, defaultHeaders: headers, logLevel: 'off' as const };
  return {
    openai: new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'sk-faults', ...common }),
    anthropic: new Anthropic({ baseURL, apiKey: 'sk-ant-faults', ...common }),
  };
}

function classify(err: unknown, started: boolean): Outcome {
  if (err instanceof OpenAI.APIConnectionTimeoutError || err instanceof Anthropic.APIConnectionTimeoutError)
    return 'hung';
  if (err instanceof OpenAI.APIError || err instanceof Anthropic.APIError) {
    if (err.status !== undefined) return `http ${err.status}`;
    return started ? 'broken' : 'connection';
  }
  if (err instanceof SyntaxError) return 'malformed';
  const text = err instanceof Error ? `${err.name} ${err.message}` : String(err);
  if (/JSON|parse|Unexpected/i.test(text)) return 'malformed';
  return started || /terminated|aborted|closed|socket|reset/i.test(text) ? 'broken' : 'connection';
}

type Params = Record<string, unknown>;

/** Sends one request the way the route's SDK does, reads the whole answer, and says how it ended. */
export async function sendTurn(
  clients: Clients,
  route: Route,
  body: Params,
  extraHeaders: Record<string, string> = {},
): Promise<Outcome> {
  const stream = body.stream === true;
  const options = { headers: extraHeaders };
  let started = false;
  try {
    if (route === 'chat') {
      if (!stream) {
        const res = await clients.openai.chat.completions.create(body as never, options);
        return (res as { choices?: unknown[] }).choices?.length ? 'ok' : 'malformed';
      }
      const s = await clients.openai.chat.completions.create(body as never, options);
      started = true;
      for await (const chunk of s as unknown as AsyncIterable<unknown>) void chunk;
      return 'ok';
    }
    if (route === 'messages') {
      if (!stream) {
        const res = await clients.anthropic.messages.create(body as never, options);
        return (res as { content?: unknown[] }).content ? 'ok' : 'malformed';
      }
      const s = await clients.anthropic.messages.create(body as never, options);
      started = true;
      for await (const event of s as unknown as AsyncIterable<unknown>) void event;
      return 'ok';
    }
    if (!stream) {
      const res = await clients.openai.responses.create(body as never, options);
      return (res as { output?: unknown[] }).output ? 'ok' : 'malformed';
    }
    const s = await clients.openai.responses.create(body as never, options);
    started = true;
    for await (const event of s as unknown as AsyncIterable<unknown>) void event;
    return 'ok';
  } catch (err) {
    return classify(err, started);
  }
}
