import { sseEvent, splitText, type ReplyPlan } from './reply-plan';

/** Anthropic Messages: the JSON body and the streaming event sequence (Anthropic API reference, "Streaming"). */
const messageId = (plan: ReplyPlan): string => `msg_stub_${plan.seq}`;
const stopReason = (plan: ReplyPlan): string => (plan.toolCalls.length > 0 ? 'tool_use' : 'end_turn');

/** Tool arguments arrive as a JSON string; a tool_use block needs the object (a non-JSON string is kept whole). */
function toolInput(args: string): unknown {
  if (args.trim().length === 0) return {};
  try {
    return JSON.parse(args) as unknown;
  } catch (err) {
    // A scripted reply may pass non-JSON arguments on purpose (to test a client's handling); the block still
    // needs an object, so the raw text and the parse error travel inside one.
    return { _raw: args, _error: err instanceof Error ? err.message : String(err) };
  }
}

function blocks(plan: ReplyPlan): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  if (plan.text.length > 0 || plan.toolCalls.length === 0) out.push({ type: 'text', text: plan.text });
  for (const c of plan.toolCalls)
    out.push({ type: 'tool_use', id: c.id, name: c.name, input: toolInput(c.arguments) });
  return out;
}

export function messagesJson(plan: ReplyPlan): unknown {
  return {
    id: messageId(plan),
    type: 'message',
    role: 'assistant',
    content: blocks(plan),
    model: plan.model,
    stop_reason: stopReason(plan),
    stop_sequence: null,
    usage: { input_tokens: plan.promptTokens, output_tokens: plan.completionTokens },
  };
}

/** message_start, per block (start, deltas, stop; one ping after the first start), message_delta, message_stop. */
export function messagesEvents(plan: ReplyPlan): string[] {
  const events = [
    sseEvent(
      {
        type: 'message_start',
        message: {
          id: messageId(plan),
          type: 'message',
          role: 'assistant',
          content: [],
          model: plan.model,
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: plan.promptTokens, output_tokens: 1 },
        },
      },
      'message_start',
    ),
  ];
  blocks(plan).forEach((block, index) => {
    const isText = block.type === 'text';
    const start = isText ? { type: 'text', text: '' } : { ...block, input: {} };
    events.push(
      sseEvent({ type: 'content_block_start', index, content_block: start }, 'content_block_start'),
    );
    if (index === 0) events.push(sseEvent({ type: 'ping' }, 'ping'));
    const source = isText ? plan.text : JSON.stringify(block.input);
    for (const piece of splitText(source)) {
      const delta = isText
        ? { type: 'text_delta', text: piece }
        : { type: 'input_json_delta', partial_json: piece };
      events.push(sseEvent({ type: 'content_block_delta', index, delta }, 'content_block_delta'));
    }
    events.push(sseEvent({ type: 'content_block_stop', index }, 'content_block_stop'));
  });
  events.push(
    sseEvent(
      {
        type: 'message_delta',
        delta: { stop_reason: stopReason(plan), stop_sequence: null },
        usage: { output_tokens: plan.completionTokens },
      },
      'message_delta',
    ),
  );
  events.push(sseEvent({ type: 'message_stop' }, 'message_stop'));
  return events;
}
