/**
 * A message as the engine sees it, whatever wire format it came in (OpenAI chat, Anthropic messages, Responses
 * items). Format adapters at the edge build these; the engine never looks at the original shapes.
 */
export interface NeutralMessage {
  /** `system` covers system, developer and mid-conversation system items: never evicted. */
  role: 'system' | 'user' | 'assistant' | 'tool';
  /** Readable text (text blocks joined), for the summariser, pins and search. */
  text: string;
  /** Characters that count toward the estimate: text, tool-call names and arguments, tool results, images. */
  chars: number;
  /** Tool-call ids this message opens (assistant tool_calls, tool_use blocks, function_call items). */
  callIds: string[];
  /** Tool-call ids this message answers (tool messages, tool_result blocks, function_call_output items). */
  resultIds: string[];
  /** Tool calls it makes, for the summariser transcript. */
  toolCalls: { name: string; args: string }[];
  /** Only text a person typed can be pinned (user messages, not tool results). */
  userTyped: boolean;
  /** Plain text only: the big-paste spill may cut it to head and tail. */
  spillable: boolean;
  /** Stable digest of the original item (sha256 hex of its canonical JSON), for prefix hashes. */
  digest: string;
}

/** Everything the planner needs to know about the budget; all numbers in tokens. */
export interface BudgetInfo {
  window: number;
  /** min(floor(window x threshold), window - reserve): ARCHITECTURE.md#compaction. */
  budget: number;
  /**
   * The budget before the margin an unproven estimate holds back (marginedBudget); absent when none is held. The
   * newest message is cut only past this: the margin is taken from older messages, never from the one being asked
   * (issue 30 item 8, RebuildInput.newestBudget).
   */
  whole?: number;
  /** The reserve actually applied (clamped to half the window when it is not below it). */
  reserve: number;
  reserveClamped: boolean;
}

export interface KeepRecent {
  /** Share of (window - reserve) kept verbatim after a new cut. */
  fraction: number;
  /** Exact count of messages kept, overriding the fraction. */
  messages?: number;
  /**
   * Turns like the newest one that a new cut leaves room for under the budget before the next cut (ADR 0021): the
   * kept tail gives way to that room, down to the newest turn. 0 or absent: the fraction and the minimum alone.
   */
  headroomTurns?: number;
}

/** How many tokens a count of characters is, with the learned per-model factor. */
export interface Counter {
  charsPerToken: number;
  factor: number;
}
