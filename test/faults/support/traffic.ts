// Conversations that grow turn by turn on the three routes guardian reads, the way coding agents resend their whole
// history: deterministic text, so two runs send the same bytes. Used by the fault suite, the crash loop and the
// secrets test (and by bench/soak.ts, which has its own copy of the few lines it needs so bench/ stays standalone;
// the words come from bench/, which never imports from test/).

import { FILLER_WORDS } from '../../../bench/support';

export type Route = 'chat' | 'messages' | 'responses';
export const ROUTES: readonly Route[] = ['chat', 'messages', 'responses'];

export const PATHS: Record<Route, string> = {
  chat: '/v1/chat/completions',
  messages: '/v1/messages',
  responses: '/v1/responses',
};

/** About `words` words of seeded filler prose. */
export function prose(seed: number, words: number): string {
  let s = (seed * 2654435761) >>> 0 || 1;
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    out.push(FILLER_WORDS[s % FILLER_WORDS.length] ?? 'note');
  }
  return out.join(' ');
}

interface Turn {
  user: string;
  assistant: string;
}

/**
 * One conversation: `turns(n)` is the history a client resends on its n-th request (n from 1), ending in a user
 * message. Each earlier turn carries a user message and a (synthetic) assistant answer of `wordsPerTurn` words.
 */
export class Conversation {
  private readonly history: Turn[] = [];

  constructor(
    readonly route: Route,
    readonly seed: number,
    private readonly wordsPerTurn = 220,
    /** The model the client names (state such as the summariser's circuit breaker is kept per model). */
    readonly model = 'stub-model',
  ) {}

  private turn(i: number): Turn {
    while (this.history.length <= i) {
      const k = this.history.length;
      this.history.push({
        user: `Turn ${k} of conversation ${this.seed}: ${prose(this.seed * 1000 + k, this.wordsPerTurn)}`,
        assistant: `Answer ${k}: ${prose(this.seed * 1000 + k + 500, this.wordsPerTurn / 2)}`,
      });
    }
    return this.history[i]!;
  }

  /** The message texts of request number `n`, oldest first (what the archive must hold once evicted). */
  texts(n: number): string[] {
    const out: string[] = [];
    for (let i = 0; i < n - 1; i++) out.push(this.turn(i).user, this.turn(i).assistant);
    out.push(this.turn(n - 1).user);
    return out;
  }

  /** The JSON body of request number `n` (1-based), streamed or not. */
  body(n: number, stream: boolean): Record<string, unknown> {
    const system = `You are the assistant of conversation ${this.seed}. Keep answers short.`;
    const pairs: { role: 'user' | 'assistant'; content: string }[] = [];
    for (let i = 0; i < n - 1; i++) {
      const t = this.turn(i);
      pairs.push({ role: 'user', content: t.user }, { role: 'assistant', content: t.assistant });
    }
    pairs.push({ role: 'user', content: this.turn(n - 1).user });
    const model = this.model;
    if (this.route === 'chat')
      return { model, stream, messages: [{ role: 'system', content: system }, ...pairs] };
    if (this.route === 'messages') return { model, max_tokens: 64, stream, system, messages: pairs };
    return {
      model,
      stream,
      store: false,
      instructions: system,
      input: pairs.map((p) => ({ role: p.role, content: p.content })),
    };
  }
}

/** Span refs (`<run>/<NNNN>.json`) a forwarded request names in guardian's summary block. */
export function namedSpanRefs(text: string): string[] {
  const out = new Set<string>();
  for (const m of text.matchAll(/\b([A-Za-z0-9_-]{1,80}\/\d{4,}\.json)\b/g)) out.add(m[1]!);
  return [...out];
}
