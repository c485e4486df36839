import { chatEvents, chatJson } from './chat-reply';
import { messagesEvents, messagesJson } from './messages-reply';
import { overflowAnswer } from './overflow';
import { promptText, type PromptText } from './prompt-text';
import { recallReply } from './recall-answer';
import type { ReplyPlan } from './reply-plan';
import { responsesEvents, responsesJson } from './responses-reply';
import { strictRefusal, strictRefusalBody } from './strict-fields';
import { blankSummaryText, fabricatedSummaryText, isSummaryPrompt, summaryText } from './summary';
import { countPromptText, countTokens } from './token-count';
import type { GenerationRoute, RecordedRequest, StubAnswerMode, StubFlavor, StubReply } from './types';

/** What a generation request is answered with: a JSON body, or SSE events (written by the server). */
export type GenerationAnswer =
  { kind: 'json'; status: number; body: unknown } | { kind: 'sse'; events: string[] };

/** The server state a generation answer depends on; the one-shots are consumed by `answerGeneration`. */
export interface GenerationContext {
  window: number;
  flavor: StubFlavor;
  model: string;
  nextSeq(): number;
  takeFailure(): { status: number; body: unknown } | undefined;
  /** The flavor of a pending `overflowNext`, consumed. */
  takeForcedOverflow(): StubFlavor | undefined;
  reply?: (req: RecordedRequest) => StubReply | undefined;
  /** Answer summary requests with a few characters, as a small model that cannot summarise does. */
  shortSummaries: boolean;
  /** Answer summary requests with invented transcript lines, as a small model that fabricates does. */
  fabricatedSummaries: boolean;
  /** The number of fabricated answers given so far (each gives the next shape), counted up. */
  nextFabricated(): number;
  /** Answer summary requests with a summary that holds nothing of the conversation. */
  blankSummaries: boolean;
  answer: StubAnswerMode;
  /** Answer a prompt over the window as Ollama does past `num_ctx`: 200, the front cut, the kept count reported. */
  truncate: boolean;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The body of a request the stub cannot read, shaped like the route's API. */
export function badRequest(route: RecordedRequest['route'], message: string): unknown {
  if (route === 'messages' || route === 'count_tokens') {
    return { type: 'error', error: { type: 'invalid_request_error', message } };
  }
  return { error: { message, type: 'invalid_request_error', param: null, code: 400 } };
}

/** The completion budget the request asked for, which vLLM-style overflow messages quote. */
function requestedCompletion(body: Obj): number {
  for (const key of ['max_tokens', 'max_completion_tokens', 'max_output_tokens']) {
    const v = body[key];
    if (typeof v === 'number' && Number.isFinite(v) && v > 0) return v;
  }
  return 0;
}

function replyTokens(reply: StubReply): number {
  let n = countTokens(reply.text ?? '');
  for (const c of reply.toolCalls ?? []) n += countTokens(c.name) + countTokens(c.arguments);
  return n;
}

function stubSummary(prompt: PromptText, ctx: GenerationContext): string {
  if (ctx.shortSummaries) return 'Ok.';
  if (ctx.fabricatedSummaries) return fabricatedSummaryText(prompt, () => ctx.nextFabricated());
  return ctx.blankSummaries ? blankSummaryText() : summaryText(prompt);
}

/**
 * Answers one chat / messages / responses request. Order: a pending `failNext`, then the hard window (a
 * pending `overflowNext`, or promptTokens > window: the completion budget is NOT added, so tests reason
 * about the prompt alone; with `truncate` such a prompt is answered, reporting only the window's worth), then the reply (summary requests get the stub summary; others the scripted
 * `reply`, else the answer mode's: `ok: <n> messages received`, or the recalled fact).
 */
export function answerGeneration(
  route: GenerationRoute,
  record: RecordedRequest,
  ctx: GenerationContext,
): GenerationAnswer {
  const body = record.json;
  if (!isObj(body))
    return { kind: 'json', status: 400, body: badRequest(route, 'body must be a JSON object') };
  const refusal = strictRefusal(body, route);
  if (refusal !== undefined) return { kind: 'json', status: 400, body: strictRefusalBody(route, refusal) };
  const prompt = promptText(body, route);
  const promptTokens = countPromptText(prompt);
  record.promptTokens = promptTokens;
  record.isSummary = isSummaryPrompt(prompt);
  const model = typeof body.model === 'string' && body.model.length > 0 ? body.model : ctx.model;

  const failure = ctx.takeFailure();
  if (failure) return { kind: 'json', ...failure };
  const forced = ctx.takeForcedOverflow();
  const truncated = forced === undefined && ctx.truncate && promptTokens > ctx.window;
  if (truncated) record.truncated = true;
  else if (forced !== undefined || promptTokens > ctx.window) {
    const facts = { window: ctx.window, promptTokens, completionTokens: requestedCompletion(body), model };
    return { kind: 'json', ...overflowAnswer(forced ?? ctx.flavor, facts) };
  }

  const reply: StubReply = record.isSummary
    ? { text: stubSummary(prompt, ctx) }
    : (ctx.reply?.(record) ??
      (ctx.answer === 'recall'
        ? { text: recallReply(prompt) }
        : { text: `ok: ${prompt.clientMessages} messages received` }));
  const streamOptions = isObj(body.stream_options) ? body.stream_options : {};
  const plan: ReplyPlan = {
    seq: ctx.nextSeq(),
    model,
    created: Math.floor(Date.now() / 1000),
    text: reply.text ?? '',
    toolCalls: reply.toolCalls ?? [],
    promptTokens: truncated ? ctx.window : promptTokens,
    completionTokens: replyTokens(reply),
    includeUsage: streamOptions.include_usage === true,
  };
  record.completionTokens = plan.completionTokens;
  const stream = body.stream === true;
  switch (route) {
    case 'chat':
      return stream
        ? { kind: 'sse', events: chatEvents(plan) }
        : { kind: 'json', status: 200, body: chatJson(plan) };
    case 'messages':
      return stream
        ? { kind: 'sse', events: messagesEvents(plan) }
        : { kind: 'json', status: 200, body: messagesJson(plan) };
    case 'responses':
      return stream
        ? { kind: 'sse', events: responsesEvents(plan) }
        : { kind: 'json', status: 200, body: responsesJson(plan) };
  }
}
