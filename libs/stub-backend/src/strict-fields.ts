import type { GenerationRoute } from './types';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

// What the stub reads on each generation route (issue 27: "the test stub must refuse what vLLM refuses"). A request
// that carries anything else is refused with a 400, so a test through the stub proves guardian forwards only what a
// self-hosted backend takes. The lists are the APIs' own (the official SDKs' request types: openai 6.49
// `ResponseCreateParams`, `ChatCompletionCreateParams`; @anthropic-ai/sdk 1.14 beta `MessageCreateParams`), plus
// vLLM's documented extra parameters, plus what recorded real clients send beyond the APIs (vLLM accepts those).
// vLLM itself refuses unknown item and content types (its request models are pydantic unions of the SDK's types)
// but logs and ignores an unknown top-level field; the stub refuses that too, because a field the backend drops is a
// feature the client asked for and did not get (docs/native-compaction.md#the-strict-stub).

const RESPONSES_FIELDS = [
  'background',
  'conversation',
  'include',
  'input',
  'instructions',
  'max_output_tokens',
  'max_tool_calls',
  'metadata',
  'model',
  'moderation',
  'parallel_tool_calls',
  'previous_response_id',
  'prompt',
  'prompt_cache_key',
  'prompt_cache_options',
  'prompt_cache_retention',
  'reasoning',
  'safety_identifier',
  'service_tier',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'text',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'truncation',
  'user',
  // vLLM's own (ResponsesRequest)
  'cache_salt',
  'enable_response_messages',
  'logit_bias',
  'mm_processor_kwargs',
  'previous_input_messages',
  'priority',
  'request_id',
  'skip_special_tokens',
  'top_k',
  // Codex sends it on every request (test/works-with/recordings/codex-*.json)
  'client_metadata',
];

const CHAT_FIELDS = [
  'audio',
  'frequency_penalty',
  'function_call',
  'functions',
  'logit_bias',
  'logprobs',
  'max_completion_tokens',
  'max_tokens',
  'messages',
  'metadata',
  'modalities',
  'model',
  'moderation',
  'n',
  'parallel_tool_calls',
  'prediction',
  'presence_penalty',
  'prompt_cache_key',
  'prompt_cache_options',
  'prompt_cache_retention',
  'reasoning_effort',
  'response_format',
  'safety_identifier',
  'seed',
  'service_tier',
  'stop',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'user',
  'verbosity',
  'web_search_options',
  // vLLM's own (ChatCompletionRequest: sampling and extra parameters)
  'add_generation_prompt',
  'add_special_tokens',
  'allowed_token_ids',
  'bad_words',
  'cache_salt',
  'chat_template',
  'chat_template_kwargs',
  'continue_final_message',
  'documents',
  'echo',
  'ignore_eos',
  'include_reasoning',
  'include_stop_str_in_output',
  'kv_transfer_params',
  'length_penalty',
  'min_p',
  'min_tokens',
  'mm_processor_kwargs',
  'priority',
  'prompt_logprobs',
  'repetition_penalty',
  'request_id',
  'return_token_ids',
  'return_tokens_as_token_ids',
  'skip_special_tokens',
  'spaces_between_special_tokens',
  'stop_token_ids',
  'structured_outputs',
  'thinking_token_budget',
  'top_k',
  'truncate_prompt_tokens',
  'use_beam_search',
  'vllm_xargs',
];

const MESSAGES_FIELDS = [
  'betas',
  'billing_policy',
  'cache_control',
  'container',
  'diagnostics',
  'fallback_credit_token',
  'fallbacks',
  'inference_geo',
  'max_tokens',
  'mcp_servers',
  'messages',
  'metadata',
  'model',
  'output_config',
  'output_format',
  'service_tier',
  'speed',
  'stop_sequences',
  'stream',
  'system',
  'temperature',
  'thinking',
  'thread',
  'tool_choice',
  'tools',
  'top_k',
  'top_p',
  'user_profile_id',
  'workspace_id',
  // vLLM's own (AnthropicMessagesRequest)
  'chat_template_kwargs',
  'kv_transfer_params',
];

const FIELDS: Record<GenerationRoute, ReadonlySet<string>> = {
  responses: new Set(RESPONSES_FIELDS),
  chat: new Set(CHAT_FIELDS),
  messages: new Set(MESSAGES_FIELDS),
};

/**
 * The providers' compaction vocabulary (issue 27): defined by the APIs, unknown to a self-hosted backend. Guardian
 * serves it itself and must never forward it, so the stub refuses it whatever the lists above say.
 */
const COMPACTION_FIELDS = ['context_management', 'compaction'];
const COMPACTION_ITEMS = ['compaction', 'compaction_trigger', 'compaction_summary', 'context_compaction'];

/** Responses input items (`ResponseInputItem`), the compaction ones apart. */
const RESPONSES_ITEMS = new Set([
  'message',
  'file_search_call',
  'computer_call',
  'computer_call_output',
  'web_search_call',
  'function_call',
  'function_call_output',
  'tool_search_call',
  'tool_search_output',
  'additional_tools',
  'reasoning',
  'image_generation_call',
  'code_interpreter_call',
  'local_shell_call',
  'local_shell_call_output',
  'shell_call',
  'shell_call_output',
  'apply_patch_call',
  'apply_patch_call_output',
  'mcp_list_tools',
  'mcp_approval_request',
  'mcp_approval_response',
  'mcp_call',
  'custom_tool_call',
  'custom_tool_call_output',
  'item_reference',
  'program',
  'program_output',
]);
/** Content parts of a Responses message (input and output) and of a function call's output list. */
const RESPONSES_PARTS = new Set(['input_text', 'input_image', 'input_file', 'output_text', 'refusal']);
/** Chat content parts (`ChatCompletionContentPart`, an assistant's refusal), and vLLM's multimodal ones. */
const CHAT_PARTS = new Set([
  'text',
  'image_url',
  'input_audio',
  'file',
  'refusal',
  'audio_url',
  'video_url',
  'image_embeds',
  'input_text',
]);
/** Anthropic content blocks (`BetaContentBlockParam`), the compaction block apart. */
const MESSAGES_BLOCKS = new Set([
  'text',
  'image',
  'document',
  'search_result',
  'thinking',
  'redacted_thinking',
  'tool_use',
  'tool_result',
  'tool_reference',
  'server_tool_use',
  'web_search_tool_result',
  'web_fetch_tool_result',
  'advisor_tool_result',
  'code_execution_tool_result',
  'bash_code_execution_tool_result',
  'text_editor_code_execution_tool_result',
  'tool_search_tool_result',
  'mcp_tool_use',
  'mcp_tool_result',
  'container_upload',
  'tool_addition',
  'tool_removal',
  'mcp_tool_listing',
  'fallback',
]);

/** The `type` of each object in a content list that names one outside `known`, with where it was. */
function unknownParts(content: unknown, known: ReadonlySet<string>, where: string): string | undefined {
  if (!Array.isArray(content)) return undefined;
  for (const [i, part] of content.entries()) {
    if (!isObj(part) || typeof part.type !== 'string') continue;
    if (COMPACTION_ITEMS.includes(part.type) || !known.has(part.type))
      return `${where}[${i}]: unknown content type '${part.type}'`;
    // A tool result holds blocks of its own (text, image, document, search_result, tool_reference).
    if (part.type === 'tool_result') {
      const inner = unknownParts(part.content, known, `${where}[${i}].content`);
      if (inner) return inner;
    }
  }
  return undefined;
}

function responsesRefusal(body: Obj): string | undefined {
  if (!Array.isArray(body.input)) return undefined;
  for (const [i, item] of body.input.entries()) {
    if (!isObj(item)) continue;
    // An item without a type is an easy input message (`{role, content}`).
    const type = typeof item.type === 'string' ? item.type : 'message';
    if (COMPACTION_ITEMS.includes(type) || !RESPONSES_ITEMS.has(type))
      return `input[${i}]: unknown input item type '${type}'`;
    const content =
      type === 'message' ? item.content : type === 'function_call_output' ? item.output : undefined;
    const part = unknownParts(content, RESPONSES_PARTS, `input[${i}].content`);
    if (part) return part;
  }
  return undefined;
}

function messagesRefusal(body: Obj, known: ReadonlySet<string>): string | undefined {
  const system = unknownParts(body.system, known, 'system');
  if (system) return system;
  const messages = Array.isArray(body.messages) ? (body.messages as unknown[]) : [];
  for (const [i, m] of messages.entries()) {
    if (!isObj(m)) continue;
    const part = unknownParts(m.content, known, `messages[${i}].content`);
    if (part) return part;
  }
  return undefined;
}

/**
 * Why the backend would refuse this body (a 400 with this message), or undefined when it reads it: a top-level field
 * the route does not define, an input item or content type the API does not define, or any of the compaction
 * vocabulary.
 */
export function strictRefusal(body: Obj, route: GenerationRoute): string | undefined {
  for (const field of COMPACTION_FIELDS) if (field in body) return `${field}: Extra inputs are not permitted`;
  for (const field of Object.keys(body))
    if (!FIELDS[route].has(field)) return `Unrecognized request argument supplied: ${field}`;
  if (route === 'responses') return responsesRefusal(body);
  return messagesRefusal(body, route === 'chat' ? CHAT_PARTS : MESSAGES_BLOCKS);
}

/**
 * The refusal's body as vLLM answers a request its models do not validate (400, its RequestValidationError handler:
 * `type` is the status phrase); Anthropic's shape on /v1/messages.
 */
export function strictRefusalBody(route: GenerationRoute, message: string): unknown {
  if (route === 'messages') return { type: 'error', error: { type: 'invalid_request_error', message } };
  return { error: { message, type: 'Bad Request', param: null, code: 400 } };
}
