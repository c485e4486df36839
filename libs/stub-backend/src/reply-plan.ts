/** Everything an API-specific writer needs to answer one generation request. */
export interface ReplyPlan {
  /** Per-server sequence number, so ids are deterministic. */
  seq: number;
  model: string;
  /** Unix seconds. */
  created: number;
  text: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  promptTokens: number;
  completionTokens: number;
  /** OpenAI chat `stream_options.include_usage`. */
  includeUsage: boolean;
}

/**
 * Splits reply text into 2-4 deltas on word boundaries (a single word is cut in half), so a barrier between
 * the first and second SSE event has something to hold back. Empty text gives no delta.
 */
export function splitText(text: string): string[] {
  if (text.length === 0) return [];
  const words = text.split(/(?<=\s)/);
  if (words.length < 2) {
    if (text.length < 2) return [text];
    const mid = Math.ceil(text.length / 2);
    return [text.slice(0, mid), text.slice(mid)];
  }
  const size = Math.ceil(words.length / Math.min(4, words.length));
  const chunks: string[] = [];
  for (let i = 0; i < words.length; i += size) chunks.push(words.slice(i, i + size).join(''));
  return chunks;
}

/** One SSE event (HTML Living Standard §9.2.6 framing): optional `event:` line, one `data:` line, blank line. */
export function sseEvent(data: unknown, event?: string): string {
  const payload = typeof data === 'string' ? data : JSON.stringify(data);
  return event === undefined ? `data: ${payload}\n\n` : `event: ${event}\ndata: ${payload}\n\n`;
}
