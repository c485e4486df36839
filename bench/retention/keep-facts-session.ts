// The keep-facts session (issue 17 §3): 12 facts over 48 turns, four of each kind, then one question per fact.
// Deterministic for a seed: the seed picks the fact wordings, their values, the turns they are stated in and the
// filler around them. The assistant's side is scripted, so every backend sees the same history.
import { filler } from '../support';
import { factValue, type ChatMessage } from './harness';

export type FactKind = 'pinned' | 'instruction' | 'plain';
export const KINDS: readonly FactKind[] = ['pinned', 'instruction', 'plain'];
export const SESSION_TURNS = 48;
/** Facts are stated in the first two thirds, so that every window evicts them before the questions. */
const LAST_FACT_TURN = 32;

export interface Fact {
  kind: FactKind;
  value: string;
  /** The sentence the user types, verbatim. */
  statement: string;
  question: string;
  turn: number;
}

interface Template {
  say: (v: string) => string;
  ask: string;
}

/** Pinned facts use the seed's pin phrases (ARCHITECTURE.md#compaction), one phrase each. */
const PINNED: Template[] = [
  {
    say: (v) => `Remember this: the staging database host is ${v}.`,
    ask: 'What is the staging database host?',
  },
  { say: (v) => `Don't forget: the on-call pager id is ${v}.`, ask: 'What is the on-call pager id?' },
  {
    say: (v) => `Make a note: the vault path for the payment keys is ${v}.`,
    ask: 'What is the vault path for the payment keys?',
  },
  {
    say: (v) => `Pin this: the load balancer certificate serial is ${v}.`,
    ask: 'What is the load balancer certificate serial?',
  },
  {
    say: (v) => `Keep this for later: the service account is ${v}.`,
    ask: 'Which service account should we use?',
  },
  { say: (v) => `Note this for later: the invoice batch id is ${v}.`, ask: 'What is the invoice batch id?' },
];
/** Standing instructions, as users type them (docs/adr/0012-instruction-ledger.md). */
const INSTRUCTION: Template[] = [
  { say: (v) => `From now on, tag every release with ${v}.`, ask: 'What do you tag every release with?' },
  {
    say: (v) => `Always prefix new git branches with ${v}.`,
    ask: 'What must new git branch names start with?',
  },
  {
    say: (v) => `Never deploy to production without the approval code ${v}.`,
    ask: 'Which approval code does a production deploy need?',
  },
  {
    say: (v) => `Use ${v} as the commit trailer on every commit from now on.`,
    ask: 'What trailer goes on every commit?',
  },
  {
    say: (v) => `Do not merge a pull request unless ticket ${v} is linked in it.`,
    ask: 'Which ticket must be linked before a merge?',
  },
  {
    say: (v) => `Make sure every migration file name starts with ${v}.`,
    ask: 'How must migration file names start?',
  },
];
const PLAIN: Template[] = [
  {
    say: (v) => `By the way, the billing service runs in the cluster named ${v}.`,
    ask: 'Which cluster does the billing service run in?',
  },
  {
    say: (v) => `The nightly export writes its files to the bucket ${v}.`,
    ask: 'Which bucket does the nightly export write to?',
  },
  {
    say: (v) => `Our monitoring dashboard for the queue is called ${v}.`,
    ask: 'What is the queue monitoring dashboard called?',
  },
  {
    say: (v) => `The customer who reported the timeout bug is account ${v}.`,
    ask: 'Which customer account reported the timeout bug?',
  },
  {
    say: (v) => `The last green build of the parser was ${v}.`,
    ask: 'What was the last green build of the parser?',
  },
  {
    say: (v) => `The legacy webhook secret prefix is ${v}.`,
    ask: 'What is the legacy webhook secret prefix?',
  },
];
const TEMPLATES: Record<FactKind, Template[]> = { pinned: PINNED, instruction: INSTRUCTION, plain: PLAIN };

/** A small seeded generator (LCG), so a seed always builds the same session. */
function rng(seed: number): () => number {
  let s = (seed * 2654435761) >>> 0 || 1;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function shuffled<T>(items: readonly T[], next: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export interface Session {
  seed: number;
  facts: Fact[];
  system: string;
  /** User and assistant text of each turn (index 0 is turn 1). */
  user: string[];
  assistant: string[];
}

/** The session of one seed. Each fact sits on a turn of its own; its user message stays short, as typed text is. */
export function keepFactsSession(seed: number): Session {
  const next = rng(seed);
  const turns = shuffled(
    Array.from({ length: LAST_FACT_TURN }, (_, i) => i + 1),
    next,
  ).slice(0, 12);
  const facts: Fact[] = [];
  KINDS.forEach((kind, k) => {
    shuffled(TEMPLATES[kind], next)
      .slice(0, 4)
      .forEach((t, i) => {
        const value = factValue(seed, k * 4 + i);
        facts.push({ kind, value, statement: t.say(value), question: t.ask, turn: turns[k * 4 + i]! });
      });
  });
  const user: string[] = [];
  const assistant: string[] = [];
  for (let t = 1; t <= SESSION_TURNS; t++) {
    const stated = facts.filter((f) => f.turn === t).map((f) => f.statement);
    user.push([`Step ${t}: ${filler(420, seed * 1000 + t)}.`, ...stated].join('\n'));
    assistant.push(`Done with step ${t}. ${filler(2600, seed * 1000 + t + 500)}.`);
  }
  return {
    seed,
    facts,
    system: 'You are a coding assistant working on a billing service. Answer briefly.',
    user,
    assistant,
  };
}

/** The history before the questions: every turn, user and assistant. */
export function history(s: Session): ChatMessage[] {
  const out: ChatMessage[] = [{ role: 'system', content: s.system }];
  s.user.forEach((u, i) =>
    out.push({ role: 'user', content: u }, { role: 'assistant', content: s.assistant[i]! }),
  );
  return out;
}

/** The question about one fact, as the user's next message. */
export function questionFor(f: Fact): ChatMessage {
  return {
    role: 'user',
    content: `Quick check from earlier in this session, reply with the exact value only. ${f.question}`,
  };
}

/**
 * The no-compaction baseline: the same facts, stated in the same words, in a conversation short enough that nothing
 * is evicted (only the turns that state a fact, with a short reply). What a model answers here is what it can
 * answer at all; an answered figure through guardian means something only beside it (issue 17 §4).
 */
export function baselineHistory(s: Session): ChatMessage[] {
  const out: ChatMessage[] = [{ role: 'system', content: s.system }];
  for (const f of [...s.facts].sort((a, b) => a.turn - b.turn))
    out.push({ role: 'user', content: f.statement }, { role: 'assistant', content: 'Noted.' });
  return out;
}
