import { isFactCorrection } from './supersede';
import type { NeutralMessage } from './types';

/**
 * Pinned facts (ARCHITECTURE.md#compaction, the seed's phrase list): a sentence a user typed that asks for it to be
 * kept is carried verbatim in every later compacted request, whatever a summary says. So are `## Must Keep` bullets.
 */
const PIN_PHRASES = [
  /\bremember (?:this|that|these)\b/i,
  /\bkeep (?:this|that|these|it)\b[^.!?\n]*\bfor later\b/i,
  /\bfor later (?:use|reference)\b/i,
  /\bdon'?t forget\b/i,
  /\bdo not forget\b/i,
  /\bmake a note\b/i,
  /\bnote (?:this|that) for later\b/i,
  /\bpin (?:this|that)\b/i,
];

/** A request that stands alone ("Remember this:") pins the sentence after it too. */
const BARE_REQUEST =
  /^\s*(?:please\s+)?(?:remember (?:this|that|these)|keep (?:this|that|these|it) for later|for later (?:use|reference)|pin (?:this|that)|don'?t forget|do not forget|make a note|note (?:this|that) for later)\s*[:.!-]?\s*$/i;

/** Splits text into sentences, keeping line breaks as boundaries (lists, code) and the terminal punctuation. */
export function sentences(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split(/\n+/)) {
    // A sentence ends at . ! ? or : only when whitespace follows, so exact values (1.2.3, 10:30,
    // http://host:8080, config.yaml) stay inside their sentence.
    for (const p of line.split(/(?<=[.!?:])\s+/)) {
      const s = p.trim();
      if (s) out.push(s);
    }
  }
  return out;
}

/** Any pin phrase anywhere in a text: one linear scan, no allocation. */
const ANY_PIN = new RegExp(PIN_PHRASES.map((re) => re.source).join('|'), 'i');

/**
 * The lines of a text that hold a pin phrase, each with the first sentence after it (a bare "Remember this:" takes
 * the next sentence, which may start the next line). Lazy: a 45 MB paste is scanned, never split into an array of
 * lines.
 */
function* pinLines(text: string): Generator<{ line: string; next: string }> {
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const line = text.slice(start, end);
    start = end + 1;
    if (!ANY_PIN.test(line)) continue;
    let next = '';
    for (let at = start; at < text.length && !next;) {
      let e = text.indexOf('\n', at);
      if (e === -1) e = text.length;
      next = sentences(text.slice(at, e))[0] ?? '';
      at = e + 1;
    }
    yield { line, next };
  }
}

/** The sentences of one user-typed text that ask to be kept, in order. */
export function extractPins(text: string): string[] {
  if (!ANY_PIN.test(text)) return [];
  const pins: string[] = [];
  for (const { line, next } of pinLines(text)) {
    const all = sentences(line);
    for (let i = 0; i < all.length; i++) {
      const s = all[i] ?? '';
      if (!PIN_PHRASES.some((re) => re.test(s))) continue;
      // "Remember this:" alone, or any request that ends in a colon, introduces the sentence after it.
      const after = i + 1 < all.length ? all[i + 1] : next;
      if ((BARE_REQUEST.test(s) || s.endsWith(':')) && after) {
        pins.push(`${s} ${after}`.trim());
        if (i + 1 < all.length) i += 1;
      } else {
        pins.push(s);
      }
    }
  }
  return mergePins(pins);
}

/** Cheap test first: a correction says "update", "correction", "change of plan" or "now". */
const MAY_CORRECT = /\b(?:update|correction|change of plan|now|changed to|moved to)\b/i;
/** Beyond this a message is a paste, not typed words (the ledger's bound, LEDGER_MESSAGE_MAX_CHARS). */
const CORRECTION_SCAN_MAX_CHARS = 1500;

/**
 * The sentences of a typed text that correct a fact ("Update: project Heron's release codename is now CEDAR-789"):
 * pinned without a pin phrase, so the value that replaced a pinned one is carried as long as the old one is
 * (issue 32 item 1, docs/adr/0020-facts-that-change.md).
 */
export function factCorrections(text: string): string[] {
  if (text.length > CORRECTION_SCAN_MAX_CHARS || !MAY_CORRECT.test(text)) return [];
  const all = sentences(text);
  const out: string[] = [];
  for (let i = 0; i < all.length; i++) {
    const s = all[i] ?? '';
    // "Update:" alone introduces the sentence after it, as a bare pin request does.
    const joined = s.endsWith(':') && i + 1 < all.length ? `${s} ${all[i + 1]}` : undefined;
    if (joined !== undefined && isFactCorrection(joined)) {
      out.push(joined);
      i += 1;
    } else if (isFactCorrection(s)) out.push(s);
  }
  return out;
}

/** Bullets of the `## Must Keep` section the summary prompt asks for (up to the next heading). */
export function mustKeepBullets(summary: string): string[] {
  const m = /^#{1,6}\s*must keep\s*$/im.exec(summary);
  if (!m) return [];
  const rest = summary.slice(m.index + m[0].length);
  const out: string[] = [];
  for (const line of rest.split('\n')) {
    if (/^#{1,6}\s/.test(line)) break;
    const b = /^\s*[-*•]\s+(.+?)\s*$/.exec(line);
    if (b?.[1] && !/^\(?none\)?\.?$/i.test(b[1])) out.push(b[1]);
  }
  return out;
}

/** Union in first-seen order. */
export function mergePins(...lists: readonly (readonly string[])[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const list of lists) {
    for (const p of list) {
      if (!seen.has(p)) {
        seen.add(p);
        out.push(p);
      }
    }
  }
  return out;
}

/** Caps pins at `maxChars` in total, dropping the oldest first (GUARDIAN_PIN_MAX_CHARS; 0 turns pinning off). */
export function capPins(pins: readonly string[], maxChars: number): string[] {
  if (maxChars <= 0) return [];
  const kept: string[] = [];
  let total = 0;
  for (let i = pins.length - 1; i >= 0; i--) {
    const p = pins[i] ?? '';
    if (total + p.length + 3 > maxChars) break;
    total += p.length + 3;
    kept.unshift(p);
  }
  return kept;
}

/**
 * Per message, computed once: a conversation's messages come back on every turn, and a message object that is read
 * again (the app reuses it for bytes a client resent) never changes its text. A cache of a pure function, as the
 * ledger's: the results are the same without it.
 */
const pinsOf = new WeakMap<NeutralMessage, readonly string[]>();
const NO_PINS: readonly string[] = Object.freeze([]);

/** The pins each message asks for, index for index (only text a person typed can pin). */
export function pinsByMessage(messages: readonly NeutralMessage[]): (readonly string[])[] {
  return messages.map((m) => {
    // One shared empty list: most messages pin nothing, and a 354-message turn made 300 empty arrays.
    if (!m.userTyped || m.role !== 'user') return NO_PINS;
    let found = pinsOf.get(m);
    if (found === undefined) {
      found = mergePins(extractPins(m.text), factCorrections(m.text));
      pinsOf.set(m, found);
    }
    return found;
  });
}

/**
 * The pins a summary block carries for a cut, in shedding order (the first is shed first,
 * ARCHITECTURE.md#compaction): the
 * summaries' `## Must Keep` bullets that the current summary no longer states, then the user's own pins from the
 * evicted messages, each oldest first. The user's own words outrank a model's list of them
 * (docs/adr/0008-rebuild-policy.md), so the cap at GUARDIAN_PIN_MAX_CHARS drops the bullets first too.
 */
export function carriedPins(opts: {
  byMessage: readonly (readonly string[])[];
  cut: number;
  mustKeep: readonly string[];
  /** The summary text as the block carries it: a bullet it still states is not repeated. */
  summary: string;
  maxChars: number;
}): string[] {
  const typed = mergePins(...opts.byMessage.slice(0, opts.cut));
  const typedSet = new Set(typed);
  const bullets = opts.mustKeep.filter((b) => !typedSet.has(b) && !opts.summary.includes(b));
  return capPins([...bullets, ...typed], opts.maxChars);
}
