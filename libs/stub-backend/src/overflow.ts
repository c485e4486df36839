import type { StubFlavor } from './types';

/** What the stub knows when it rejects a prompt as too long. */
export interface OverflowFacts {
  window: number;
  promptTokens: number;
  /** `max_tokens` / `max_completion_tokens` / `max_output_tokens` of the request, 0 when absent. */
  completionTokens: number;
  model: string;
}

/** A rejection: the status and JSON body the real backend sends. */
export interface OverflowAnswer {
  status: number;
  body: unknown;
}

/** The OpenAI-family wording vLLM, LiteLLM and OpenAI itself share for "messages + completion > window". */
function requestedWording(f: OverflowFacts): string {
  const total = f.promptTokens + f.completionTokens;
  return (
    `This model's maximum context length is ${f.window} tokens. However, you requested ${total} tokens ` +
    `(${f.promptTokens} in the messages, ${f.completionTokens} in the completion). ` +
    `Please reduce the length of the messages or completion.`
  );
}

/**
 * Each backend's real "prompt too long" answer, wording copied from the backend (source in each branch).
 * All are HTTP 400; a streamed request gets the same JSON before any SSE byte, as these servers do.
 */
export function overflowAnswer(flavor: StubFlavor, f: OverflowFacts): OverflowAnswer {
  switch (flavor) {
    case 'vllm':
      // vLLM OpenAI server (serving_engine.py, >= 0.10): error object nested under "error"; older releases
      // sent {object:'error', message, type, param, code} at top level (vllm-project/vllm#20409).
      return {
        status: 400,
        body: {
          error: { message: requestedWording(f), type: 'BadRequestError', param: 'input_tokens', code: 400 },
        },
      };
    case 'llamacpp':
      // llama.cpp tools/server: ERROR_TYPE_EXCEED_CONTEXT_SIZE, same body on /v1/chat/completions and /v1/messages.
      return {
        status: 400,
        body: {
          error: {
            code: 400,
            message: `request (${f.promptTokens} tokens) exceeds the available context size (${f.window} tokens), try increasing it`,
            type: 'exceed_context_size_error',
            n_prompt_tokens: f.promptTokens,
            n_ctx: f.window,
          },
        },
      };
    case 'ollama':
      // Ollama with truncation off answers "the input length exceeds the context length"; its OpenAI layer
      // (openai/openai.go NewError) wraps it as {message, type: invalid_request_error, param: null, code: null}.
      return {
        status: 400,
        body: {
          error: {
            message: 'the input length exceeds the context length',
            type: 'invalid_request_error',
            param: null,
            code: null,
          },
        },
      };
    case 'lmstudio':
      // LM Studio 0.3.x answers a bare string error (lmstudio-bug-tracker#237, #546), wording verbatim.
      return {
        status: 400,
        body: {
          error:
            `Trying to keep the first ${f.promptTokens} tokens when context the overflows. However, the model ` +
            `is loaded with context length of only ${f.window} tokens, which is not enough. Try to load the ` +
            `model with a larger context length, or provide a shorter input`,
        },
      };
    case 'litellm':
      // LiteLLM proxy: ProxyException body, type/param null and a STRING code (OpenHands/OpenHands#5350).
      return {
        status: 400,
        body: {
          error: {
            message:
              `litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: ` +
              `Hosted_vllmException - ${requestedWording(f)}\nmodel=${f.model}. context_window_fallbacks=None. ` +
              `fallbacks=None.\n\nSet 'context_window_fallback' - https://docs.litellm.ai/docs/routing#fallbacks. ` +
              `Received Model Group=${f.model}\nAvailable Model Group Fallbacks=None`,
            type: null,
            param: null,
            code: '400',
          },
        },
      };
    case 'anthropic':
      // Anthropic Messages API invalid_request_error (quoted in BerriAI/litellm and OpenHands issues).
      return {
        status: 400,
        body: {
          type: 'error',
          error: {
            type: 'invalid_request_error',
            message: `prompt is too long: ${f.promptTokens} tokens > ${f.window} maximum`,
          },
        },
      };
    case 'none':
      // A plain OpenAI-compatible server with no discovery endpoint: OpenAI's own context_length_exceeded.
      return {
        status: 400,
        body: {
          error: {
            message:
              `This model's maximum context length is ${f.window} tokens. However, your messages resulted in ` +
              `${f.promptTokens} tokens. Please reduce the length of the messages.`,
            type: 'invalid_request_error',
            param: 'messages',
            code: 'context_length_exceeded',
          },
        },
      };
  }
}
