import { promptText, type PromptText } from './prompt-text';
import type { GenerationRoute } from './types';

/** Every message costs this much on top of its text: role markers and separators of a chat template. */
export const MESSAGE_OVERHEAD_TOKENS = 4;

/**
 * The stub's tokenizer. Deliberately NOT characters / 3.5 (the seed's estimate), so that guardian's estimate
 * and the stub's exact count differ the way they do against a real model:
 * - text splits on whitespace into pieces;
 * - a piece with a letter or digit (any non-ASCII character counts as one) costs ceil(length / 4) tokens,
 *   length in UTF-16 code units;
 * - a piece of ASCII punctuation only (`--`, `{}`, `.`) costs 1 token whatever its length.
 * Hand-written loop instead of a regex split: benchmarks count megabytes through it.
 */
export function countTokens(text: string): number {
  let tokens = 0;
  let len = 0;
  let wordy = false;
  for (let i = 0; i <= text.length; i++) {
    const code = i < text.length ? text.charCodeAt(i) : 32;
    if (code === 32 || (code >= 9 && code <= 13) || code === 0xa0) {
      if (len > 0) tokens += wordy ? Math.ceil(len / 4) : 1;
      len = 0;
      wordy = false;
      continue;
    }
    len++;
    if (!wordy && (code > 127 || (code >= 48 && code <= 57) || ((code | 32) >= 97 && (code | 32) <= 122))) {
      wordy = true;
    }
  }
  return tokens;
}

/** Tokens of an already split prompt: overhead + text per message, plus the `tools` array as compact JSON. */
export function countPromptText(prompt: PromptText): number {
  let total = 0;
  for (const m of prompt.messages) {
    total += MESSAGE_OVERHEAD_TOKENS + m.flatTokens;
    for (const t of m.texts) total += countTokens(t);
  }
  if (prompt.tools !== undefined) total += countTokens(JSON.stringify(prompt.tools));
  return total;
}

/**
 * How the stub counts a whole request: every message's text (system prompt, tool calls as name + arguments,
 * tool results, Responses `instructions`), 4 tokens per message, and the `tools` array's JSON.
 */
export function countPrompt(json: unknown, route: GenerationRoute): number {
  return countPromptText(promptText(json, route));
}
