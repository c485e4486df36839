import { LEDGER_MESSAGE_MAX_CHARS, LEDGER_SENTENCE_MAX_CHARS, typedWords } from './ledger';
import { sentences } from './pins';
import { identifiersIn } from './recall';
import { RECALL_TOOL_NAMES } from './recall-tools';
import { factStatement } from './supersede';
import type { NeutralMessage } from './types';

/**
 * Stated values (issue 32, docs/adr/0020-facts-that-change.md): the exact values a session's state is made of (a
 * port, a queue, a branch, an artifact id a tool reported, the current task and the next step) are carried verbatim
 * in the block once their message is evicted, instead of being left to a summary a model writes. A summary that
 * holds nothing of them (a small model, a summariser that paraphrases) then loses none of them. A fixed rule over the
 * history the client resent, as the ledger is: the same history gives the same bytes, and a reused cut the same block.
 *
 * Two sources, nothing else: sentences the user typed that hold an exact value or state the work ("Current task:
 * ..."), and one line per tool result (the call, and the first line of its result that holds a value). An assistant's
 * prose is the summary's to keep.
 */
export const STATED_HEADING =
  'Values stated in those messages, verbatim (what the user typed, and what tools returned), oldest first:';

/** One carried line and the message it was read from (a larger `at` is newer). */
export interface StatedLine {
  text: string;
  at: number;
}

/** A tool line: the call's arguments and the result's line are cut to these. */
const TOOL_ARGS_MAX_CHARS = 80;
const TOOL_RESULT_MAX_CHARS = 160;
/** A sentence ending in a colon this short is a label ("Current task:"): it takes the sentence after it. */
const LABEL_MAX_CHARS = 40;
/** A stated sentence has at least this many words. */
const MIN_WORDS = 3;
/** The most characters of a tool result read for its line: a file read of megabytes is not scanned whole. */
const RESULT_SCAN_MAX_CHARS = 20_000;

/**
 * What makes a sentence hold an exact value, besides the identifiers anchors and recall know (a URL, a path, an
 * ALL-CAPS id with `-`/`_`, a CamelCase id, a document and line id): a word with letters then digits (`db-7`, `v2`,
 * `L044`), a number of three or more digits (a port, a PR), a dotted version or address (`1.4.2`, `10.0.0.7`).
 */
const VALUE_WORDS = [/\b[A-Za-z]+[-_]?\d[\w.-]*/, /\b\d{3,}\b/, /\b\d+(?:\.\d+){2,}\b/];

/** True when the text holds an exact value by the rule above. */
function holdsValue(text: string): boolean {
  return VALUE_WORDS.some((re) => re.test(text)) || identifiersIn(text, 1).size > 0;
}

const cut = (s: string, max: number): string => (s.length <= max ? s : `${s.slice(0, max - 1)}…`);

/**
 * The value-bearing sentences of one typed text, in order: a sentence (a label joined to the sentence after it) of at
 * most LEDGER_SENTENCE_MAX_CHARS and at least MIN_WORDS words that states the work (`Current task:`, `Next step:`, ...) or holds an exact value, and
 * is not a question. A paste (over LEDGER_MESSAGE_MAX_CHARS once the client's tagged blocks, fenced code and quoted
 * lines are removed) is not read, as the ledger does not read one.
 */
export function statedSentences(text: string): string[] {
  const typed = typedWords(text);
  if (typed.trim().length > LEDGER_MESSAGE_MAX_CHARS) return [];
  const all = sentences(typed);
  const out: string[] = [];
  for (let i = 0; i < all.length; i++) {
    let s = all[i] ?? '';
    const next = all[i + 1];
    // A label takes the sentence after it, unless that is a label of its own ("Notes:" over "doc12 L043: ...").
    if (s.endsWith(':') && s.length <= LABEL_MAX_CHARS && next !== undefined && !next.endsWith(':')) {
      s = `${s} ${next}`;
      i += 1;
    }
    // Two words ("Step 100.", "Port 8443?") label or ask; a statement names what its value is.
    if (s.length > LEDGER_SENTENCE_MAX_CHARS || s.endsWith('?') || s.split(/\s+/).length < MIN_WORDS)
      continue;
    if (holdsValue(s) || factStatement(s)?.key.endsWith(':') === true) out.push(s);
  }
  return out;
}

/** Per message, computed once (a cache of a pure function, as the ledger's): the history comes back every turn. */
const byMessage = new WeakMap<NeutralMessage, readonly string[]>();

function typedLines(m: NeutralMessage): readonly string[] {
  if (m.role !== 'user' || !m.userTyped) return [];
  let found = byMessage.get(m);
  if (found === undefined) {
    found = statedSentences(m.text);
    byMessage.set(m, found);
  }
  return found;
}

/** The line of a tool result: the first that holds a value, else the first that is not blank. */
export function valueLine(text: string): string {
  let first = '';
  for (const raw of text.slice(0, RESULT_SCAN_MAX_CHARS).split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    if (holdsValue(line)) return line;
    first ||= line;
  }
  return first;
}

/** `tool <name> <args> returned: <line>` for a message holding tool results, or undefined (a recall tool's). */
function toolLine(
  m: NeutralMessage,
  calls: ReadonlyMap<string, { name: string; args: string }>,
): string | undefined {
  if (m.resultIds.length === 0 || m.userTyped || m.role === 'system') return undefined;
  const called = m.resultIds.map((id) => calls.get(id)).filter((c) => c !== undefined);
  // Guardian's own recall tools re-read the archive: their answers are not the session's state.
  if (called.some((c) => RECALL_TOOL_NAMES.has(c.name))) return undefined;
  const line = valueLine(m.text);
  if (!line) return undefined;
  const call = called[0];
  const name = call
    ? `${call.name} ${cut(call.args.replace(/\s+/g, ' ').trim(), TOOL_ARGS_MAX_CHARS)}`.trim()
    : 'a tool';
  const more = called.length > 1 ? ` (and ${called.length - 1} more)` : '';
  return `tool ${name}${more} returned: ${cut(line, TOOL_RESULT_MAX_CHARS)}`;
}

/**
 * The stated values a block carries for a cut, oldest first: read from the evicted messages [0, cut) newest first,
 * each line once (its newest), none already carried verbatim by a pin or the ledger, until `maxChars` is full (0: off).
 * Tool lines take at most half of it, so a tool-heavy stretch cannot push out what the user said. Stops reading once
 * both are full, so a session of thousands of messages costs no more than a short one.
 */
export function statedValues(opts: {
  messages: readonly NeutralMessage[];
  cut: number;
  maxChars: number;
  /** What the block already carries verbatim (pins, ledger): a line inside one is not repeated. */
  carried: readonly string[];
}): StatedLine[] {
  const { messages, maxChars } = opts;
  const end = Math.min(opts.cut, messages.length);
  if (maxChars <= 0 || end <= 0) return [];
  const calls = new Map<string, { name: string; args: string }>();
  for (let i = 0; i < end; i++) {
    const m = messages[i]!;
    if (m.callIds.length === m.toolCalls.length) m.callIds.forEach((id, k) => calls.set(id, m.toolCalls[k]!));
  }
  const seen = new Set<string>();
  const out: StatedLine[] = [];
  let total = 0;
  let tools = 0;
  let typedFull = false;
  let toolsFull = false;
  const fits = (s: string): boolean => total + s.length + 3 <= maxChars;
  for (let i = end - 1; i >= 0 && !(typedFull && toolsFull); i--) {
    const m = messages[i]!;
    const tool = toolsFull ? undefined : toolLine(m, calls);
    if (tool !== undefined && !seen.has(tool)) {
      if (fits(tool) && tools + tool.length + 3 <= maxChars / 2) {
        seen.add(tool);
        total += tool.length + 3;
        tools += tool.length + 3;
        out.push({ text: tool, at: i });
      } else toolsFull = true;
    }
    if (typedFull) continue;
    const lines = typedLines(m);
    for (let k = lines.length - 1; k >= 0; k--) {
      const s = lines[k]!;
      if (seen.has(s) || opts.carried.some((c) => c.includes(s))) continue;
      if (!fits(s)) {
        typedFull = true;
        break;
      }
      seen.add(s);
      total += s.length + 3;
      out.push({ text: s, at: i });
    }
  }
  return out.reverse();
}
