// One developer's growing chat conversation, sent turn by turn to whichever replica the test names, as a
// Kubernetes Service spreads one session's turns over pods (issue 7). Deterministic: a seeded word list.
import { ARCHIVE_FENCE } from '@guardian/compaction';
import type { RecordedRequest } from '@guardian/stub-backend';

const WORDS = (
  'ledger invoice tenant migration schema rollback replica cursor batch export parser window queue ' +
  'worker retry timeout handler request response cache latency deploy config session billing index'
).split(' ');

/** How the forwarded request states the cut (libs/compaction renderSummaryBlock). */
const EVICTED = /The (\d+) earlier message\(s\) of this conversation were moved out/;

interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ConversationOptions {
  session: string;
  /** Words in each user turn (about 1.3 stub tokens a word). */
  wordsPerTurn: number;
  model?: string;
}

export class Conversation {
  readonly messages: ChatMessage[] = [
    { role: 'system', content: 'You are a careful engineer helping with a billing service migration.' },
  ];
  private turns = 0;
  private seed: number;

  constructor(private readonly options: ConversationOptions) {
    this.seed = options.wordsPerTurn * 7919;
  }

  /** Sends the next turn to `replicaUrl`, keeps the assistant's answer in the history, returns the status. */
  async send(replicaUrl: string): Promise<number> {
    this.messages.push({ role: 'user', content: this.userText() });
    const { status, answer } = await this.post(replicaUrl);
    this.messages.push({ role: 'assistant', content: answer || `(no answer, HTTP ${status})` });
    return status;
  }

  /** Adds `turns` user turns with a short assistant reply each, without sending them (a resumed session). */
  grow(turns: number): this {
    for (let i = 0; i < turns; i++) {
      this.messages.push({ role: 'user', content: this.userText() });
      this.messages.push({ role: 'assistant', content: `Done with step ${this.turns}.` });
    }
    return this;
  }

  /** Sends the history as it stands (the same request a retrying client would send to another pod). */
  async post(replicaUrl: string): Promise<{ status: number; answer: string }> {
    const res = await fetch(`${replicaUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-replicas',
        'x-guardian-session': this.options.session,
      },
      body: JSON.stringify({
        model: this.options.model ?? 'stub-model',
        messages: this.messages,
        max_tokens: 64,
      }),
    });
    const text = await res.text();
    if (res.status !== 200) return { status: res.status, answer: '' };
    const json = JSON.parse(text) as { choices?: { message?: { content?: string | null } }[] };
    return { status: res.status, answer: json.choices?.[0]?.message?.content ?? '' };
  }

  private userText(): string {
    this.turns += 1;
    const words: string[] = [`Step ${this.turns} of the migration.`];
    for (let i = 0; i < this.options.wordsPerTurn; i++) {
      this.seed = (this.seed * 1664525 + 1013904223) >>> 0;
      words.push(WORDS[this.seed % WORDS.length] ?? 'note');
    }
    return words.join(' ');
  }
}

/** A compacted request as the upstream received it: how many messages its summary covers, and its block. */
export interface ForwardedCompaction {
  /** 0-based position among the conversation's forwarded (non-summary) chat requests: the turn. */
  turn: number;
  evicted: number;
  block: string;
}

/** The compacted, non-summary chat requests the stub recorded, in order. */
export function forwardedCompactions(requests: readonly RecordedRequest[]): ForwardedCompaction[] {
  const found: ForwardedCompaction[] = [];
  let turn = -1;
  for (const r of requests) {
    if (r.route !== 'chat' || r.isSummary) continue;
    turn += 1;
    const first = (r.json as { messages?: { content?: unknown }[] } | undefined)?.messages?.[0];
    const content = typeof first?.content === 'string' ? first.content : '';
    const match = EVICTED.exec(content);
    if (match?.[1] === undefined) continue;
    found.push({ turn, evicted: Number(match[1]), block: content.slice(content.indexOf(ARCHIVE_FENCE)) });
  }
  return found;
}

/**
 * Stretches seen by the upstream: one per distinct cut among the compacted requests (ARCHITECTURE.md#compaction
 * "Stretch"), so the expected number of summariser calls is computed from what was forwarded, never typed in.
 */
export function stretchesSeen(requests: readonly RecordedRequest[]): number {
  return new Set(forwardedCompactions(requests).map((c) => c.evicted)).size;
}

/** Summariser calls the stub answered. */
export function summariserCalls(requests: readonly RecordedRequest[]): number {
  return requests.filter((r) => r.isSummary).length;
}
