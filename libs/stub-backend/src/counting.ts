import { badRequest } from './generation';
import { promptText } from './prompt-text';
import { isSummaryPrompt } from './summary';
import { countPromptText, countTokens } from './token-count';
import type { RecordedRequest, StubFlavor } from './types';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface JsonAnswer {
  status: number;
  body: unknown;
}

/** Deterministic stand-in token ids: only their number matters to a client. */
function tokenIds(count: number): number[] {
  return Array.from({ length: count }, (_, i) => 1000 + (i % 30000));
}

/**
 * `POST /tokenize`. llama.cpp shape (tools/server README): `{content}` -> `{tokens: [...]}`. vLLM shape
 * (entrypoints/openai/protocol.py TokenizeResponse): `{model, messages}` (chat-counted, tools included) or
 * `{model, prompt}` -> `{count, max_model_len, tokens, token_strs}`. Counts equal what the hard window uses.
 */
export function answerTokenize(
  record: RecordedRequest,
  ctx: { flavor: StubFlavor; window: number; tokenizeTools: boolean },
): JsonAnswer {
  const body = record.json;
  if (!isObj(body)) return { status: 400, body: badRequest('tokenize', 'body must be a JSON object') };
  if (!ctx.tokenizeTools && body.tools !== undefined) {
    return { status: 400, body: badRequest('tokenize', 'extra inputs are not permitted: tools') };
  }
  if (ctx.flavor === 'llamacpp') {
    if (typeof body.content !== 'string') {
      return { status: 400, body: badRequest('tokenize', '"content" must be provided') };
    }
    record.promptTokens = countTokens(body.content);
    record.isSummary = isSummaryPrompt({
      messages: [{ texts: [body.content], flatTokens: 0 }],
      clientMessages: 1,
    });
    return { status: 200, body: { tokens: tokenIds(record.promptTokens) } };
  }
  if (Array.isArray(body.messages)) {
    const prompt = promptText(body, 'chat');
    record.promptTokens = countPromptText(prompt);
    record.isSummary = isSummaryPrompt(prompt);
  } else if (typeof body.prompt === 'string') {
    record.promptTokens = countTokens(body.prompt);
    record.isSummary = isSummaryPrompt({
      messages: [{ texts: [body.prompt], flatTokens: 0 }],
      clientMessages: 1,
    });
  } else {
    return { status: 400, body: badRequest('tokenize', 'either "prompt" or "messages" must be provided') };
  }
  const count = record.promptTokens;
  return {
    status: 200,
    body: { count, max_model_len: ctx.window, tokens: tokenIds(count), token_strs: null },
  };
}

/** `POST /v1/messages/count_tokens` (Anthropic API reference): `{input_tokens}`, counted like `/v1/messages`. */
export function answerCountTokens(record: RecordedRequest): JsonAnswer {
  const body = record.json;
  if (!isObj(body)) return { status: 400, body: badRequest('count_tokens', 'body must be a JSON object') };
  const prompt = promptText(body, 'messages');
  record.promptTokens = countPromptText(prompt);
  record.isSummary = isSummaryPrompt(prompt);
  return { status: 200, body: { input_tokens: record.promptTokens } };
}

/**
 * llama.cpp `POST /apply-template` (tools/server README): `{messages}` -> `{prompt}`, the chat rendered with the
 * model's template. The test model has none, so llama-server falls back to ChatML; so does the stub.
 */
export function answerApplyTemplate(record: RecordedRequest): JsonAnswer {
  const body = record.json;
  if (!isObj(body) || !Array.isArray(body.messages)) {
    return { status: 400, body: badRequest('tokenize', '"messages" must be provided') };
  }
  const turns = body.messages.map((m) => {
    const role = isObj(m) && typeof m.role === 'string' ? m.role : 'user';
    const content =
      isObj(m) && typeof m.content === 'string'
        ? m.content
        : JSON.stringify(isObj(m) ? (m.content ?? '') : m);
    return `<|im_start|>${role}\n${content}<|im_end|>\n`;
  });
  // Tool-aware templates (Qwen's, for one) render the tools as JSON in a leading system turn.
  const tools = Array.isArray(body.tools) && body.tools.length > 0 ? body.tools : undefined;
  const toolTurn = tools
    ? `<|im_start|>system\n# Tools\n<tools>${JSON.stringify(tools)}</tools><|im_end|>\n`
    : '';
  return { status: 200, body: { prompt: `${toolTurn}${turns.join('')}<|im_start|>assistant\n` } };
}
