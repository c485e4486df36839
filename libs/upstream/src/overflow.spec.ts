import { parseOverflow } from './overflow';

// LiteLLM 1.108.7's own answers when the backend behind it refuses a prompt as too long, copied verbatim from the
// proxy (2026-12-02, test/works-with/run-litellm.ts): it wraps the backend's message in its own text, so the
// backend's JSON fields arrive as escaped text inside LiteLLM's `message`.
const TAIL =
  "\\nmodel=stub-model. context_window_fallbacks=None. fallbacks=None.\\n\\nSet 'context_window_fallback' - " +
  "https://docs.litellm.ai/docs/routing#fallbacks\\n\\nLiteLLM: model group 'stub-model' failed with the error above. No fallback was attempted.";
const VLLM_INNER =
  '{\\"error\\":{\\"message\\":\\"This model\'s maximum context length is 4096 tokens. However, you requested 9012 tokens ' +
  '(9004 in the messages, 8 in the completion). Please reduce the length of the messages or completion.\\",' +
  '\\"type\\":\\"BadRequestError\\",\\"param\\":\\"input_tokens\\",\\"code\\":400}}';

const litellmChat = (inner: string): string =>
  `{"error":{"message":"litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: ${inner}${TAIL}","type":"invalid_request_error","param":null,"code":"400"}}`;

describe('parseOverflow: LiteLLM wrapping the backend it routes to', () => {
  it('reads vLLM numbers out of LiteLLM chat-completions error text', () => {
    const body = litellmChat(`Hosted_vllmException - ${VLLM_INNER}`);
    expect(parseOverflow(400, body)).toEqual({ shape: 'litellm', window: 4096, promptTokens: 9004 });
  });

  it('reads them out of the Anthropic-shaped error LiteLLM answers on /v1/messages', () => {
    const body =
      '{"type":"error","error":{"type":"invalid_request_error","message":"litellm.ContextWindowExceededError: ' +
      `litellm.BadRequestError: ContextWindowExceededError: Hosted_vllmException - ${VLLM_INNER}${TAIL}"}}`;
    expect(parseOverflow(400, body)).toEqual({ shape: 'litellm', window: 4096, promptTokens: 9004 });
  });

  it("reads llama.cpp's sentence, whose JSON fields LiteLLM drops, for both numbers", () => {
    // llama.cpp's body has n_prompt_tokens / n_ctx fields; through LiteLLM's openai/ provider only its message is left.
    const body = litellmChat(
      'OpenAIException - request (9004 tokens) exceeds the available context size (4096 tokens), try increasing it',
    );
    expect(parseOverflow(400, body)).toEqual({ shape: 'litellm', window: 4096, promptTokens: 9004 });
  });

  it('reads llama.cpp numbers that arrive as escaped JSON inside a wrapper', () => {
    const body = litellmChat(
      'OpenAIException - {\\"error\\":{\\"code\\":400,\\"message\\":\\"request (9004 tokens) exceeds the available context size ' +
        '(4096 tokens), try increasing it\\",\\"type\\":\\"exceed_context_size_error\\",\\"n_prompt_tokens\\":9004,\\"n_ctx\\":4096}}',
    );
    expect(parseOverflow(400, body)).toEqual({ shape: 'llamacpp', window: 4096, promptTokens: 9004 });
  });

  it("still recognises Ollama's wording without numbers when LiteLLM wraps it", () => {
    const body =
      '{"error":{"message":"litellm.BadRequestError: OpenAIException - the input length exceeds the context length\\n\\n' +
      'LiteLLM: model group \'ollama-model\' failed with the error above. No fallback was attempted.","type":"invalid_request_error","param":null,"code":"400"}}';
    expect(parseOverflow(400, body)).toEqual({ shape: 'ollama', window: undefined });
  });

  it('leaves LiteLLM errors that are not about length alone', () => {
    const body =
      '{"error":{"message":"Authentication Error, Invalid proxy server token passed. Received API Key = sk-...abcd",' +
      '"type":"auth_error","param":"None","code":"401"}}';
    expect(parseOverflow(401, body)).toBeUndefined();
    expect(
      parseOverflow(
        400,
        '{"error":{"message":"litellm.BadRequestError: Invalid model name passed in model=nope","type":"invalid_request_error","param":null,"code":"400"}}',
      ),
    ).toBeUndefined();
  });
});

describe('parseOverflow: the backends answering directly (unchanged)', () => {
  it("reads llama.cpp's own JSON fields", () => {
    const body =
      '{"error":{"code":400,"message":"request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it",' +
      '"type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}';
    expect(parseOverflow(400, body)).toEqual({ shape: 'llamacpp', window: 4096, promptTokens: 5000 });
  });

  it("reads vLLM's own answer", () => {
    const body = `{"error":${VLLM_INNER.replace(/\\"/g, '"').slice('{"error":'.length, -1)}}`;
    expect(parseOverflow(400, body)).toEqual({ shape: 'vllm', window: 4096, promptTokens: 9004 });
  });
});
