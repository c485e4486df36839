import { sseEvent, splitText, type ReplyPlan } from './reply-plan';

/** OpenAI chat completions: the JSON body and the SSE stream (OpenAI API reference, chat.completion.chunk). */
function finishReason(plan: ReplyPlan): string {
  return plan.toolCalls.length > 0 ? 'tool_calls' : 'stop';
}

function usage(plan: ReplyPlan): Record<string, number> {
  return {
    prompt_tokens: plan.promptTokens,
    completion_tokens: plan.completionTokens,
    total_tokens: plan.promptTokens + plan.completionTokens,
  };
}

const chatId = (plan: ReplyPlan): string => `chatcmpl-stub-${plan.seq}`;

export function chatJson(plan: ReplyPlan): unknown {
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: plan.text.length > 0 || plan.toolCalls.length === 0 ? plan.text : null,
  };
  if (plan.toolCalls.length > 0) {
    message.tool_calls = plan.toolCalls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
  }
  return {
    id: chatId(plan),
    object: 'chat.completion',
    created: plan.created,
    model: plan.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(plan) }],
    usage: usage(plan),
  };
}

/** Role chunk, content deltas, tool-call deltas, finish chunk, optional usage chunk, `[DONE]`. */
export function chatEvents(plan: ReplyPlan): string[] {
  const chunk = (delta: unknown, finish: string | null = null): string =>
    sseEvent({
      id: chatId(plan),
      object: 'chat.completion.chunk',
      created: plan.created,
      model: plan.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
  const events = [chunk({ role: 'assistant', content: '' })];
  for (const piece of splitText(plan.text)) events.push(chunk({ content: piece }));
  plan.toolCalls.forEach((c, index) => {
    events.push(
      chunk({
        tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }],
      }),
    );
    for (const piece of splitText(c.arguments)) {
      events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  events.push(chunk({}, finishReason(plan)));
  if (plan.includeUsage) {
    events.push(
      sseEvent({
        id: chatId(plan),
        object: 'chat.completion.chunk',
        created: plan.created,
        model: plan.model,
        choices: [],
        usage: usage(plan),
      }),
    );
  }
  events.push(sseEvent('[DONE]'));
  return events;
}
