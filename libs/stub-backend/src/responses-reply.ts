import { sseEvent, splitText, type ReplyPlan } from './reply-plan';

/** OpenAI Responses (stateless): the JSON body and the streaming events (OpenAI API reference, "Streaming events"). */
const responseId = (plan: ReplyPlan): string => `resp_stub_${plan.seq}`;
const messageItemId = (plan: ReplyPlan): string => `msg_stub_${plan.seq}`;

function usage(plan: ReplyPlan): Record<string, unknown> {
  return {
    input_tokens: plan.promptTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: plan.completionTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: plan.promptTokens + plan.completionTokens,
  };
}

function messageItem(plan: ReplyPlan, text: string, status: string): Record<string, unknown> {
  const content = status === 'completed' ? [{ type: 'output_text', text, annotations: [] }] : [];
  return { id: messageItemId(plan), type: 'message', status, role: 'assistant', content };
}

function callItem(plan: ReplyPlan, i: number, args: string, status: string): Record<string, unknown> {
  const call = plan.toolCalls[i];
  return {
    id: `fc_stub_${plan.seq}_${i}`,
    type: 'function_call',
    status,
    call_id: call?.id ?? '',
    name: call?.name ?? '',
    arguments: args,
  };
}

function hasMessage(plan: ReplyPlan): boolean {
  return plan.text.length > 0 || plan.toolCalls.length === 0;
}

function outputs(plan: ReplyPlan): Record<string, unknown>[] {
  const out = hasMessage(plan) ? [messageItem(plan, plan.text, 'completed')] : [];
  plan.toolCalls.forEach((c, i) => out.push(callItem(plan, i, c.arguments, 'completed')));
  return out;
}

function response(plan: ReplyPlan, done: boolean): Record<string, unknown> {
  return {
    id: responseId(plan),
    object: 'response',
    created_at: plan.created,
    status: done ? 'completed' : 'in_progress',
    error: null,
    incomplete_details: null,
    model: plan.model,
    output: done ? outputs(plan) : [],
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    usage: done ? usage(plan) : null,
  };
}

export function responsesJson(plan: ReplyPlan): unknown {
  return response(plan, true);
}

/**
 * response.created, response.in_progress, then per output item: output_item.added, its deltas, its done
 * events, output_item.done; finally response.completed carrying usage. Every event has a sequence_number.
 */
export function responsesEvents(plan: ReplyPlan): string[] {
  const events: string[] = [];
  const emit = (type: string, data: Record<string, unknown>): void => {
    events.push(sseEvent({ type, sequence_number: events.length, ...data }, type));
  };
  emit('response.created', { response: response(plan, false) });
  emit('response.in_progress', { response: response(plan, false) });
  let outputIndex = 0;
  if (hasMessage(plan)) {
    const item_id = messageItemId(plan);
    const at = { item_id, output_index: outputIndex, content_index: 0 };
    emit('response.output_item.added', {
      output_index: outputIndex,
      item: messageItem(plan, '', 'in_progress'),
    });
    emit('response.content_part.added', { ...at, part: { type: 'output_text', text: '', annotations: [] } });
    for (const delta of splitText(plan.text))
      emit('response.output_text.delta', { ...at, delta, logprobs: [] });
    emit('response.output_text.done', { ...at, text: plan.text, logprobs: [] });
    emit('response.content_part.done', {
      ...at,
      part: { type: 'output_text', text: plan.text, annotations: [] },
    });
    emit('response.output_item.done', {
      output_index: outputIndex,
      item: messageItem(plan, plan.text, 'completed'),
    });
    outputIndex++;
  }
  plan.toolCalls.forEach((c, i) => {
    const item_id = `fc_stub_${plan.seq}_${i}`;
    emit('response.output_item.added', {
      output_index: outputIndex,
      item: callItem(plan, i, '', 'in_progress'),
    });
    for (const delta of splitText(c.arguments)) {
      emit('response.function_call_arguments.delta', { item_id, output_index: outputIndex, delta });
    }
    emit('response.function_call_arguments.done', {
      item_id,
      output_index: outputIndex,
      arguments: c.arguments,
    });
    emit('response.output_item.done', {
      output_index: outputIndex,
      item: callItem(plan, i, c.arguments, 'completed'),
    });
    outputIndex++;
  });
  emit('response.completed', { response: response(plan, true) });
  return events;
}
