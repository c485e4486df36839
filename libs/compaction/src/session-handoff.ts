import { instructionsOf, typedWords } from './ledger';
import { pinsByMessage, sentences } from './pins';
import { identifiersIn } from './recall';
import { factStatement, supersession } from './supersede';
import type { NeutralMessage } from './types';

/**
 * The hand-off (issue 32 item 5, the seed's "Hand-off files"): what a new session or another agent needs to pick the
 * work up from alone: the goal, the pins as they stand (superseded ones marked), the decisions, the files touched
 * and the last open question. Read from the whole history by fixed rules, as pins and the ledger are: no model call.
 */
export interface SessionHandoff {
  goal: string | null;
  pins: { text: string; status: 'current' | 'superseded' }[];
  decisions: string[];
  files: string[];
  open_question: string | null;
  /** How many messages the hand-off was read from. */
  messages: number;
}

const GOAL_MAX_CHARS = 400;
const MAX_DECISIONS = 12;
const MAX_FILES = 30;
const QUESTION_MAX_CHARS = 400;
/** A sentence that records a choice ("We decided to ...", "Let's go with ...", "Agreed: ..."). */
const DECISION =
  /\b(?:decided|decision|we(?: will|'ll) (?:use|go with|keep|switch)|let'?s (?:use|go with|keep|switch)|agreed|going with|settled on|chose|chosen)\b/i;
/** A path-like identifier: a folder separator or a file extension, not a URL. */
const FILE_LIKE = /^(?!https?:)(?:[\w.-]*\/[\w./-]+|[\w-]+\.[A-Za-z]{1,5})$/;

const cap = (s: string, max: number): string => (s.length <= max ? s : `${s.slice(0, max - 1)}…`);

/** The hand-off of a conversation's messages (system messages are the client's, not the session's). */
export function sessionHandoff(messages: readonly NeutralMessage[]): SessionHandoff {
  const typed = messages.map((m, i) => ({ m, i })).filter(({ m }) => m.role === 'user' && m.userTyped);
  const first = typed[0];
  const goal = first ? cap(sentences(typedWords(first.m.text)).slice(0, 3).join(' '), GOAL_MAX_CHARS) : '';

  // Every pin of the session, where it was said, marked by the supersession rule (ADR 0020).
  const placed: { text: string; at: number }[] = [];
  const seen = new Set<string>();
  pinsByMessage(messages).forEach((pins, at) => {
    for (const text of pins) {
      if (seen.has(text)) continue;
      seen.add(text);
      placed.push({ text, at });
    }
  });
  const marks = supersession(placed.filter((p) => factStatement(p.text)));
  const pins = placed.map((p) => ({
    text: p.text,
    status: marks.get(p.text) === 'superseded' ? ('superseded' as const) : ('current' as const),
  }));

  // The standing instructions and the sentences that record a choice, newest kept, oldest first.
  const decisions: string[] = [];
  for (let i = messages.length - 1; i >= 0 && decisions.length < MAX_DECISIONS; i--) {
    const m = messages[i]!;
    if (m.role === 'system' || m.role === 'tool') continue;
    const found = [
      ...instructionsOf(m),
      ...(m.text.length <= 20_000 ? sentences(typedWords(m.text)).filter((s) => DECISION.test(s)) : []),
    ];
    for (const s of found.reverse()) {
      const d = cap(s, 300);
      if (!decisions.includes(d) && decisions.length < MAX_DECISIONS) decisions.push(d);
    }
  }
  decisions.reverse();

  // Paths the session's tool calls name (what was read, edited or run), then paths the assistant wrote.
  const files = new Set<string>();
  for (const m of messages) {
    for (const call of m.toolCalls)
      for (const id of identifiersIn(call.args, 200)) if (FILE_LIKE.test(id)) files.add(id);
  }
  for (const m of messages) {
    if (files.size >= MAX_FILES) break;
    if (m.role !== 'assistant') continue;
    for (const id of identifiersIn(m.text, 200)) if (FILE_LIKE.test(id)) files.add(id);
  }

  // The last question the user asked: the newest typed message's last sentence that ends in "?".
  let question: string | null = null;
  for (let k = typed.length - 1; k >= 0 && question === null; k--) {
    const asked = sentences(typedWords(typed[k]!.m.text)).filter((s) => s.endsWith('?'));
    if (asked.length > 0) question = cap(asked.at(-1)!, QUESTION_MAX_CHARS);
  }
  return {
    goal: goal || null,
    pins,
    decisions,
    files: [...files].slice(0, MAX_FILES),
    open_question: question,
    messages: messages.length,
  };
}

/** The hand-off as Markdown, for a person or an agent to read. */
export function handoffMarkdown(h: SessionHandoff): string {
  const list = (items: readonly string[]): string[] =>
    items.length > 0 ? items.map((s) => `- ${s}`) : ['- (none)'];
  return [
    '# Context Guardian hand-off',
    '',
    '## Goal',
    h.goal ?? '(not stated)',
    '',
    '## Pinned facts',
    ...list(h.pins.map((p) => (p.status === 'superseded' ? `~~${p.text}~~ (superseded)` : p.text))),
    '',
    '## Decisions',
    ...list(h.decisions),
    '',
    '## Files touched',
    ...list(h.files.map((f) => `\`${f}\``)),
    '',
    '## Last open question',
    h.open_question ?? '(none)',
    '',
  ].join('\n');
}
