import { sentences } from './pins';
import type { NeutralMessage } from './types';

/**
 * The instruction ledger (issue 17, docs/adr/0012-instruction-ledger.md): the standing instructions a user typed early
 * in a session ("never touch prod", "use pnpm") are carried verbatim in the summary block once their message is
 * evicted, instead of being left to a summary a model writes. Chosen by a fixed rule, never by a model call, so the
 * same history always gives the same ledger (and the same bytes before the kept tail on a reused cut).
 */
export const LEDGER_HEADING = 'Standing instructions from the user, verbatim, newest first:';

/** A user message longer than this, once the client's tagged blocks are removed, is a paste, not typed words. */
export const LEDGER_MESSAGE_MAX_CHARS = 1500;
/** A longer sentence describes rather than rules; it also could not crowd the ledger out on its own. */
export const LEDGER_SENTENCE_MAX_CHARS = 300;
/** Beyond this a message is not even scanned for tagged blocks: no typed message, reminders included, is this long. */
const SCAN_MAX_CHARS = 200_000;

/**
 * An opening tag at the start of a line. What a client wraps around the user's words (Claude Code's
 * `<system-reminder>`, Codex's `<environment_context>` and `<user_instructions>`) starts a line, and is not the user's
 * own instruction; neither are fenced code and quoted lines.
 */
const OPEN_TAG = /^[ \t]*<([A-Za-z][\w-]*)(?:\s[^>\n]*)?>/gm;
const FENCED_CODE = /^\s*(```|~~~)[\s\S]*?^\s*\1[^\n]*$/gm;
const QUOTED_LINE = /^\s*>.*$/gm;

/** Words that may come before the instruction proper ("Also, please never ..."), in any number. */
const LEAD = String.raw`(?:(?:and|also|so|but|actually|instead|ok(?:ay)?|oh|btw|please|pls|important|note|rule|reminder|one more thing)\b[,:!-]*\s*)*`;

/**
 * The rule. A sentence is a standing instruction when it opens with a prohibition or a lasting imperative (always,
 * never, don't, make sure, avoid, prefer, stick to, remember to), or says that it lasts (from now on, going forward,
 * for the rest of the session, until I say otherwise, every time you, by default), or binds the assistant (you must,
 * you should always, I want you to never), or is a short "use X" (the commonest tool choice: "Use pnpm.").
 */
const OPENER = new RegExp(
  String.raw`^${LEAD}(?:always|never(?! mind)|do not|don'?t|make sure|ensure|avoid|prefer|stick (?:to|with)|refrain from|remember to|under no circumstances)\b`,
  'i',
);
const LASTING =
  /\b(?:from now on|going forward|from here on(?: out)?|for the rest of (?:this|the|our) (?:session|conversation|chat|project|task)|(?:until|unless) (?:I|we) (?:say|tell you) otherwise|at all times|(?:every|each) time (?:you|we)|whenever you|by default|as a rule|in (?:the )?future)\b/i;
const BINDING =
  /\b(?:you (?:must|shall)|you (?:should|need to|have to|are to|may|can) (?:always|never|only|not ever)|(?:I|we) (?:want|need|would like|'d like) you to (?:always|never|only))\b/i;
const SHORT_USE = new RegExp(String.raw`^${LEAD}use\b`, 'i');
const SHORT_USE_MAX_WORDS = 8;

/** True when one sentence reads as a standing instruction by the rule above (a question never does). */
export function isStandingInstruction(sentence: string): boolean {
  const s = sentence.trim();
  if (s.length > LEDGER_SENTENCE_MAX_CHARS || s.endsWith('?')) return false;
  const words = s.split(/\s+/).length;
  // One word ("Never.", "Always!") answers something; it does not say what to do.
  if (words < 2) return false;
  if (OPENER.test(s) || LASTING.test(s) || BINDING.test(s)) return true;
  return SHORT_USE.test(s) && words <= SHORT_USE_MAX_WORDS;
}

/**
 * The text without its tagged blocks. Each opening tag is closed by the first matching closing tag after it; a tag
 * name found unclosed once is not searched for again, so a paste full of `<T>` generics costs one scan per name.
 */
function withoutTaggedBlocks(text: string): string {
  const unclosed = new Set<string>();
  const parts: string[] = [];
  let at = 0;
  const open = new RegExp(OPEN_TAG.source, 'gm');
  for (let m = open.exec(text); m !== null; m = open.exec(text)) {
    const name = m[1] ?? '';
    if (unclosed.has(name) || m.index < at) continue;
    const close = text.indexOf(`</${name}>`, m.index + m[0].length);
    if (close === -1) {
      unclosed.add(name);
      continue;
    }
    parts.push(text.slice(at, m.index));
    at = close + name.length + 3;
    open.lastIndex = at;
  }
  parts.push(text.slice(at));
  return parts.join('\n');
}

/** The words the user typed: the text without the client's tagged blocks, fenced code and quoted lines. */
export function typedWords(text: string): string {
  return withoutTaggedBlocks(text).replace(FENCED_CODE, '\n').replace(QUOTED_LINE, '');
}

/**
 * The standing instructions of one typed text, in order. A sentence that ends in a colon ("From now on:") takes
 * the sentence after it, as a bare pin request does.
 */
export function extractInstructions(text: string): string[] {
  if (text.length > SCAN_MAX_CHARS) return [];
  const typed = typedWords(text);
  if (typed.trim().length > LEDGER_MESSAGE_MAX_CHARS) return [];
  const all = sentences(typed);
  const out: string[] = [];
  for (let i = 0; i < all.length; i++) {
    const s = all[i] ?? '';
    const next = all[i + 1];
    if (s.endsWith(':') && next !== undefined && isStandingInstruction(`${s} ${next}`)) {
      out.push(`${s} ${next}`);
      i += 1;
    } else if (isStandingInstruction(s)) {
      out.push(s);
    }
  }
  return out;
}

/**
 * Per message, computed once: a request's messages are scanned again for every cut the planner weighs, and a
 * message object never changes its text once parsed. A cache of a pure function: the results are the same without it.
 */
const byMessage = new WeakMap<NeutralMessage, readonly string[]>();

/** The standing instructions one message holds: only a user's own typed text can hold any. */
export function instructionsOf(m: NeutralMessage): readonly string[] {
  if (m.role !== 'user' || !m.userTyped) return [];
  let found = byMessage.get(m);
  if (found === undefined) {
    found = extractInstructions(m.text);
    byMessage.set(m, found);
  }
  return found;
}

/** Case, spacing and end punctuation do not make two instructions different. */
function key(s: string): string {
  return s
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .replace(/[\s.!;,:]+$/, '')
    .trim();
}

/**
 * The ledger a summary block carries for a cut, in shedding order (oldest first; the block shows it newest first):
 * the standing instructions of the evicted messages [0, cut), each once (its newest wording), none already carried
 * verbatim by a pin, at most `maxChars` in all with the newest kept (0 turns the ledger off). Walks back from the cut
 * and stops once the cap is full, so a session of thousands of messages costs no more than a short one.
 */
export function carriedLedger(opts: {
  messages: readonly NeutralMessage[];
  cut: number;
  maxChars: number;
  /** What the block already carries verbatim (the pins): an instruction inside one is not repeated. */
  carried: readonly string[];
}): string[] {
  if (opts.maxChars <= 0) return [];
  const carried = opts.carried.map(key);
  const seen = new Set<string>();
  const newestFirst: string[] = [];
  let total = 0;
  for (let i = Math.min(opts.cut, opts.messages.length) - 1; i >= 0; i--) {
    const m = opts.messages[i];
    if (!m) continue;
    const found = instructionsOf(m);
    for (let j = found.length - 1; j >= 0; j--) {
      const s = found[j] ?? '';
      const k = key(s);
      if (seen.has(k) || carried.some((c) => c.includes(k))) continue;
      // Each entry costs its bullet and line break too, as a pin does (capPins).
      if (total + s.length + 3 > opts.maxChars) return newestFirst.reverse();
      seen.add(k);
      total += s.length + 3;
      newestFirst.push(s);
    }
  }
  return newestFirst.reverse();
}
