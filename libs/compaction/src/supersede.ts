/**
 * Facts that change (issue 32 item 1, docs/adr/0020-facts-that-change.md): a pin or ledger line that states a
 * subject's attribute with a new value supersedes an older line about the same subject and attribute. The older one
 * is still carried, marked, so the model sees what changed; the newer is marked current. A fixed rule, never a model
 * call: the same history gives the same bytes.
 */

/** The attributes recognised (the seed's list and a few more of the same kind). The last word of the phrase names it. */
const ATTRIBUTES = [
  'codename',
  'code',
  'owner',
  'version',
  'port',
  'path',
  'name',
  'host',
  'hostname',
  'key',
  'id',
  'url',
  'branch',
  'region',
  'endpoint',
  'address',
  'tag',
];
/** Up to two words may qualify the attribute ("release codename", "staging db host"). */
const ATTR = String.raw`((?:[A-Za-z][\w-]* ){0,2}(?:${ATTRIBUTES.join('|')}))`;
/** A subject is one to four words, the first not an article ("project Heron", "the billing service"). */
const SUBJECT = String.raw`((?:the )?[A-Za-z][\w.-]*(?: [A-Za-z][\w.-]*){0,3})`;
/** Words that point rather than name ("this branch", "which port"): such a phrase is not a subject. */
const POINTER = String.raw`(?!(?:the|this|that|these|those|it|its|which|what|a|an|any|some|no|every|each)\b)`;
const VERB = String.raw`(?:is|=|has (?:changed|moved) to|changed to|moved to)(?: now)?`;
const VALUE = String.raw`(.+?)`;
const END = String.raw`\s*[.!;]?\s*$`;

/** "[the] <attr> for|of <Subject> is [now] <VALUE>" */
const ATTR_FOR = new RegExp(String.raw`^(?:the )?${ATTR} (?:for|of) ${SUBJECT} ${VERB} ${VALUE}${END}`, 'i');
/** "<Subject>'s <attr> is [now] <VALUE>" */
const POSSESSIVE = new RegExp(String.raw`^${SUBJECT}'s ${ATTR} ${VERB} ${VALUE}${END}`, 'i');
/**
 * "[the] <Subject words> <attr> is [now] <VALUE>": a noun phrase of two to five words whose last names the attribute
 * ("the auth release branch", "the staging host"); the words before it are subject and qualifiers alike.
 */
const COMPOUND = new RegExp(
  String.raw`^(?:the )?${POINTER}((?:[A-Za-z][\w.-]* ){1,4}(?:${ATTRIBUTES.join('|')})) ${VERB} ${VALUE}${END}`,
  'i',
);
/**
 * "<Label>: <text>": the state of the work itself ("Current task: ...", "Next step: ..."). The label is the key, so a
 * newer task supersedes the older; the text is the value, up to a sentence long.
 */
const LABELLED =
  /^(current task|next steps?|current goal|current status|status|blocked on|blocker|open question)\s*:\s*(.+?)\s*$/i;
const LABELLED_VALUE_MAX_CHARS = 300;
/** What may come before the statement proper: a pin request, or "Update:" / "Correction:". */
const LEAD =
  /^(?:(?:please\s+)?(?:remember (?:this|that)|don'?t forget|do not forget|make a note|pin (?:this|that)|keep (?:this|that|it) for later|note (?:this|that) for later|for later (?:use|reference)|update|correction|fyi|note|heads up|change of plan|from now on|going forward)\s*[:,-]\s*)+/i;
/** A correction needs a word that says so: "Update:", "Correction:", or "is now". */
const CORRECTION_LEAD = /^(?:update|correction|change of plan)\s*[:,-]/i;
const SAYS_NOW = /\b(?:is now|now is|has changed to|changed to|has moved to|moved to)\b/i;

/** What a fact line states: the subject and attribute it is about (normalised), and the value. */
export interface FactStatement {
  key: string;
  value: string;
}

const norm = (s: string): string => s.toLowerCase().replace(/^the /, '').replace(/\s+/g, ' ').trim();

/**
 * The fact one line states, or undefined when it is not one the rule recognises. The key is the subject and the
 * attribute as one phrase ("project heron release codename"), so the three forms of one fact share it.
 */
export function factStatement(line: string): FactStatement | undefined {
  const body = line.trim().replace(LEAD, '').trim();
  const label = LABELLED.exec(body);
  if (label) {
    const text = label[2]!.trim();
    if (text.length === 0 || text.length > LABELLED_VALUE_MAX_CHARS) return undefined;
    return { key: `${label[1]!.toLowerCase().replace(/^next steps$/, 'next step')}:`, value: text };
  }
  const a = ATTR_FOR.exec(body);
  const p = a ? undefined : POSSESSIVE.exec(body);
  const c = a || p ? undefined : COMPOUND.exec(body);
  const [key, value] = a
    ? [`${norm(a[2]!)} ${norm(a[1]!)}`, a[3]]
    : p
      ? [`${norm(p[1]!)} ${norm(p[2]!)}`, p[3]]
      : c
        ? [norm(c[1]!), c[2]]
        : [];
  if (!key || !value) return undefined;
  const v = value.trim().replace(/^["'`]|["'`]$/g, '');
  // A value is a short token or phrase; a clause ("is the one we discussed because ...") is not a value.
  if (v.length === 0 || v.length > 80 || v.split(/\s+/).length > 6) return undefined;
  return { key, value: v };
}

/**
 * True when a typed sentence corrects a fact ("Update: project Heron's release codename is now CEDAR-789"): it is
 * carried as a pin of its own, so the correction outlives its message as the fact it corrects does.
 */
export function isFactCorrection(sentence: string): boolean {
  if (!CORRECTION_LEAD.test(sentence.trim()) && !SAYS_NOW.test(sentence)) return false;
  // A state line ("Status: the build is now green") is carried with the stated values, not pinned.
  const fact = factStatement(sentence);
  return fact !== undefined && !fact.key.endsWith(':');
}

/** Marks the block writes before a line the rule superseded, and before the line that supersedes it. */
export const SUPERSEDED_MARK = '[superseded by a later value]';
export const CURRENT_MARK = '[current]';

/** One carried line and where it was said: a larger `at` is newer (a message index; -1 for a summary's bullet). */
export interface PlacedLine {
  text: string;
  at: number;
}

/**
 * The marks for a set of carried lines: each line the rule reads as a fact whose subject and attribute a newer line
 * states with another value is superseded; the newest line of such a subject and attribute is current. Lines that
 * state no fact, or whose fact never changed, get no mark. Ties in `at` go to the later line in the list.
 */
export function supersession(lines: readonly PlacedLine[]): Map<string, 'superseded' | 'current'> {
  const newest = new Map<string, { value: string; at: number; order: number; text: string }>();
  const facts = lines.map((l, order) => ({ ...l, order, fact: factStatement(l.text) }));
  for (const f of facts) {
    if (!f.fact) continue;
    const seen = newest.get(f.fact.key);
    if (!seen || f.at > seen.at || (f.at === seen.at && f.order > seen.order))
      newest.set(f.fact.key, { value: f.fact.value, at: f.at, order: f.order, text: f.text });
  }
  const marks = new Map<string, 'superseded' | 'current'>();
  for (const f of facts) {
    if (!f.fact) continue;
    const current = newest.get(f.fact.key)!;
    if (f.fact.value.toLowerCase() === current.value.toLowerCase()) continue;
    marks.set(f.text, 'superseded');
    marks.set(current.text, 'current');
  }
  return marks;
}

/** A line with its mark, as the block carries it. */
function markedLine(text: string, mark: 'superseded' | 'current' | undefined): string {
  if (mark === 'superseded') return `${SUPERSEDED_MARK} ${text}`;
  if (mark === 'current') return `${CURRENT_MARK} ${text}`;
  return text;
}

/**
 * The pins, the ledger and the stated values a block carries, marked (issue 32 item 1). `pinAt` and `ledgerAt` say
 * where each line was said (a stated line knows its own); only lines that state a fact are asked. Superseded pins and
 * stated values move to the front of their shedding order, so a cap drops an old value before any current one.
 */
export function markCarried(opts: {
  pins: readonly string[];
  ledger: readonly string[];
  stated?: readonly PlacedLine[];
  pinAt: (pin: string) => number;
  ledgerAt: (line: string) => number;
}): { pins: string[]; ledger: string[]; stated: string[] } {
  const stated = opts.stated ?? [];
  const placed: PlacedLine[] = [];
  for (const p of opts.pins) if (factStatement(p)) placed.push({ text: p, at: opts.pinAt(p) });
  for (const l of opts.ledger) if (factStatement(l)) placed.push({ text: l, at: opts.ledgerAt(l) });
  for (const l of stated) if (factStatement(l.text)) placed.push(l);
  const marks = placed.length < 2 ? new Map<string, 'superseded' | 'current'>() : supersession(placed);
  const staleFirst = (lines: readonly string[]): string[] => [
    ...lines.filter((l) => marks.get(l) === 'superseded'),
    ...lines.filter((l) => marks.get(l) !== 'superseded'),
  ];
  return {
    pins: staleFirst(opts.pins).map((p) => markedLine(p, marks.get(p))),
    ledger: opts.ledger.map((l) => markedLine(l, marks.get(l))),
    stated: staleFirst(stated.map((l) => l.text)).map((l) => markedLine(l, marks.get(l))),
  };
}
