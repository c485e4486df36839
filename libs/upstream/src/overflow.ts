/** What an upstream's "prompt too long" answer says, when guardian can read it. */
export interface OverflowInfo {
  /** Prompt tokens the upstream counted. */
  promptTokens?: number;
  /** The window the upstream enforces. */
  window?: number;
  shape: 'vllm' | 'llamacpp' | 'ollama' | 'litellm' | 'anthropic' | 'generic';
}

const num = (s: string | undefined): number | undefined =>
  s === undefined ? undefined : Number(s.replace(/,/g, ''));

/**
 * Recognises the overflow answers of the backends guardian sits in front of (issue 3 §9), from the status and body
 * text. vLLM: "maximum context length is N tokens. However, you requested M tokens (P in the messages, ...";
 * llama.cpp: `exceed_context_size_error` with `n_prompt_tokens`/`n_ctx`; Anthropic: "prompt is too long: P tokens > N maximum";
 * LiteLLM: `ContextWindowExceededError`; Ollama: an `invalid_request_error` about the input length / context.
 * LiteLLM wraps the backend's answer in its own message text, so a backend's JSON fields arrive escaped (`\"n_ctx\":`)
 * or, through its `openai/` provider, not at all: llama.cpp's sentence then carries both numbers (issue 19).
 */
export function parseOverflow(status: number, bodyText: string): OverflowInfo | undefined {
  if (status !== 400 && status !== 413 && status !== 422 && status !== 500) return undefined;
  const text = bodyText.slice(0, 64 * 1024);

  if (text.includes('exceed_context_size_error')) {
    const p = /"n_prompt_tokens\\?"\s*:\s*(\d+)/.exec(text);
    const n = /"n_ctx\\?"\s*:\s*(\d+)/.exec(text);
    return { shape: 'llamacpp', promptTokens: num(p?.[1]), window: num(n?.[1]) };
  }
  const llama = /request \(([\d,]+) tokens\) exceeds the available context size \(([\d,]+) tokens\)/i.exec(
    text,
  );
  if (llama && text.includes('ContextWindowExceededError')) {
    return { shape: 'litellm', promptTokens: num(llama[1]), window: num(llama[2]) };
  }
  const anth = /prompt is too long:\s*([\d,]+)\s*tokens\s*>\s*([\d,]+)\s*maximum/i.exec(text);
  if (anth) return { shape: 'anthropic', promptTokens: num(anth[1]), window: num(anth[2]) };

  const vllm = /maximum context length is\s*([\d,]+)\s*tokens/i.exec(text);
  if (vllm) {
    const inMessages =
      /\(([\d,]+) in the messages/i.exec(text) ?? /requested\s*([\d,]+)\s*tokens/i.exec(text);
    const litellm = text.includes('ContextWindowExceededError');
    return { shape: litellm ? 'litellm' : 'vllm', window: num(vllm[1]), promptTokens: num(inMessages?.[1]) };
  }
  if (text.includes('ContextWindowExceededError') || /context_length_exceeded/.test(text)) {
    return { shape: 'litellm' };
  }
  if (
    /invalid_request_error/.test(text) &&
    /(context length|context window|input length|too long|exceeds)/i.test(text)
  ) {
    const n = /(?:context (?:length|window)|limit) (?:of )?([\d,]+)/i.exec(text);
    return { shape: 'ollama', window: num(n?.[1]) };
  }
  return undefined;
}
