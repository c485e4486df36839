import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

const WORDS = (
  'the a build test server cache window token river stone garden yellow quiet metal paper north engine signal ' +
  'market winter letter silver planet kitchen bridge forest orange mirror castle rocket harbor velvet thunder'
).split(' ');

/** Deterministic filler prose (no real data): about `chars` characters of common words. */
export function filler(seed: number, chars: number): string {
  let x = seed * 2654435761;
  const out: string[] = [];
  let len = 0;
  while (len < chars) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const w = WORDS[x % WORDS.length]!;
    out.push(w);
    len += w.length + 1;
  }
  return out.join(' ');
}

/** What the client saw on one turn: answered or the error, streamed or not, and the usage the answer carried. */
export interface Turn {
  turn: number;
  streamed: boolean;
  ok: boolean;
  /** Content chunks of a streamed answer (more than one: the answer arrived as a stream, not in one piece). */
  chunks: number;
  text: string;
  /** `usage.prompt_tokens` / `usage.input_tokens` of a non-streamed answer. */
  promptTokens?: number;
  /** HTTP status of a refused turn. */
  status?: number;
  error?: string;
}

export interface SessionOptions {
  baseURL: string;
  apiKey: string;
  model: string;
  turns: number;
  /** Characters of each user turn. */
  chars: number;
  /** Which turns (1-based) are streamed. */
  stream: (turn: number) => boolean;
  headers?: Record<string, string>;
  seed?: number;
}

const failure = (turn: number, streamed: boolean, err: unknown): Turn => ({
  turn,
  streamed,
  ok: false,
  chunks: 0,
  text: '',
  status: err instanceof OpenAI.APIError || err instanceof Anthropic.APIError ? err.status : undefined,
  error: err instanceof Error ? err.message.slice(0, 160) : String(err),
});

/** A growing chat conversation with the official `openai` client; a refused turn stays in the history. */
export async function chatSession(o: SessionOptions): Promise<Turn[]> {
  const client = new OpenAI({
    baseURL: o.baseURL,
    apiKey: o.apiKey,
    defaultHeaders: o.headers,
    maxRetries: 0,
  });
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: 'Be terse.' }];
  const out: Turn[] = [];
  for (let i = 1; i <= o.turns; i++) {
    messages.push({ role: 'user', content: `Turn ${i}. ${filler((o.seed ?? 0) + i, o.chars)}` });
    const streamed = o.stream(i);
    let t: Turn;
    try {
      if (streamed) {
        const stream = await client.chat.completions.create({
          model: o.model,
          messages,
          max_tokens: 32,
          stream: true,
        });
        let text = '';
        let chunks = 0;
        for await (const c of stream) {
          const d = c.choices[0]?.delta?.content;
          if (!d) continue;
          text += d;
          chunks += 1;
        }
        t = { turn: i, streamed, ok: text.length > 0, chunks, text };
      } else {
        const res = await client.chat.completions.create({ model: o.model, messages, max_tokens: 32 });
        const text = res.choices[0]?.message.content ?? '';
        t = {
          turn: i,
          streamed,
          ok: text.length > 0,
          chunks: 1,
          text,
          promptTokens: res.usage?.prompt_tokens,
        };
      }
    } catch (err) {
      t = failure(i, streamed, err);
    }
    out.push(t);
    messages.push({ role: 'assistant', content: t.ok ? t.text : '(no answer)' });
  }
  return out;
}

/** The same on `/v1/messages` with the official `@anthropic-ai/sdk`. */
export async function messagesSession(o: SessionOptions): Promise<Turn[]> {
  const client = new Anthropic({
    baseURL: o.baseURL,
    apiKey: o.apiKey,
    defaultHeaders: o.headers,
    maxRetries: 0,
  });
  const messages: Anthropic.MessageParam[] = [];
  const out: Turn[] = [];
  for (let i = 1; i <= o.turns; i++) {
    messages.push({ role: 'user', content: `Part ${i}. ${filler((o.seed ?? 0) + 500 + i, o.chars)}` });
    const streamed = o.stream(i);
    let t: Turn;
    try {
      const params = { model: o.model, max_tokens: 32, system: 'Be terse.', messages };
      if (streamed) {
        let text = '';
        let chunks = 0;
        const stream = client.messages.stream(params);
        stream.on('text', (d) => {
          text += d;
          chunks += 1;
        });
        await stream.finalMessage();
        t = { turn: i, streamed, ok: text.length > 0, chunks, text };
      } else {
        const res = await client.messages.create(params);
        const text = res.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
        t = { turn: i, streamed, ok: text.length > 0, chunks: 1, text, promptTokens: res.usage.input_tokens };
      }
    } catch (err) {
      t = failure(i, streamed, err);
    }
    out.push(t);
    messages.push({ role: 'assistant', content: t.ok ? t.text : '(no answer)' });
  }
  return out;
}

/** The first refused turn, or undefined when every turn was answered. */
export const firstRefused = (turns: readonly Turn[]): number | undefined => turns.find((t) => !t.ok)?.turn;

/** Even turns streamed, the last one not: the usage check compares the last answer's own `usage`. */
export const evenButLast =
  (turns: number) =>
  (turn: number): boolean =>
    turn % 2 === 0 && turn < turns;

export const answered = (turns: readonly Turn[]): number => turns.filter((t) => t.ok).length;
