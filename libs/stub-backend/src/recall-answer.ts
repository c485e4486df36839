import type { PromptText } from './prompt-text';

/**
 * The stub's `recall` answer mode (issue 17): a deterministic reader that answers the last user message by finding,
 * anywhere else in the request, the sentence that best matches the question's words and holds a `FACT-...` token, and
 * answering with that token. It stands in for a model in the keep-facts bench: a fact counts as answered against the
 * stub only when its sentence, with the words that say what it is, reached the request. A bare `## Must Keep` bullet
 * (`- FACT-X`) carries the value but not what it is, so it answers nothing, as a model could not tell either. A
 * sentence marked superseded (guardian's `[superseded by a later value]`, ADR 0020) is passed over, as the block tells
 * a model to.
 */
const FACT = /\bFACT-[A-Za-z0-9-]*[A-Za-z0-9]/;
const WORD = /[a-z][a-z0-9]{2,}/g;
/** Question words that say nothing about which fact is asked for. */
const STOP = new Set(
  'what which who where when how does did is are was the and for with from that this your you our must answer exact value only quick check please tell name named give say use earlier session reply'.split(
    ' ',
  ),
);
/** A sentence that says it no longer holds. */
const SUPERSEDED = /\bsuperseded\b/i;
/** Words match on their first letters either way round, so "releases" finds "release" and "tagged" finds "tag". */
const STEM = 5;

const stems = (text: string): string[] =>
  [...new Set(text.toLowerCase().match(WORD) ?? [])].filter((w) => !STOP.has(w)).map((w) => w.slice(0, STEM));

/** The token the best-matching sentence holds, or undefined when no sentence shares a word with the question. */
export function recallAnswer(prompt: PromptText): string | undefined {
  const last = prompt.messages.at(-1);
  if (!last) return undefined;
  const asked = stems(last.texts.join('\n'));
  let best: { score: number; token: string } | undefined;
  for (const m of prompt.messages.slice(0, -1)) {
    for (const text of m.texts) {
      for (const sentence of text.split(/(?<=[.!?])\s+|\n+/)) {
        const token = FACT.exec(sentence)?.[0];
        if (!token || SUPERSEDED.test(sentence)) continue;
        const words = (sentence.toLowerCase().match(WORD) ?? []).filter((w) => !STOP.has(w));
        const score = asked.filter((s) => words.some((w) => w.startsWith(s) || s.startsWith(w))).length;
        // Ties go to the later sentence: the newest statement of a fact wins.
        if (score > 0 && score >= (best?.score ?? 0)) best = { score, token };
      }
    }
  }
  return best?.token;
}

/** The reply text in `recall` mode. */
export function recallReply(prompt: PromptText): string {
  const token = recallAnswer(prompt);
  return token === undefined ? 'I do not know.' : `The answer is ${token}.`;
}
