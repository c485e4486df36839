/**
 * The scripted session the demo sends twice: a coding conversation whose every user turn pastes about a thousand
 * tokens of notes. Deterministic (a seeded generator), so the table is the same on every run.
 */
const WORDS = [
  'migration',
  'schema',
  'index',
  'billing',
  'service',
  'retry',
  'timeout',
  'queue',
  'worker',
  'handler',
  'request',
  'response',
  'cache',
  'latency',
  'deploy',
  'rollback',
  'config',
  'tenant',
  'invoice',
  'ledger',
  'replica',
  'cursor',
  'batch',
  'export',
  'import',
  'parser',
  'token',
  'session',
  'window',
  'summary',
];

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function notes(turn: number, words: number): string {
  const rnd = seeded(turn * 7919);
  const lines: string[] = [];
  let line: string[] = [];
  for (let i = 0; i < words; i++) {
    line.push(WORDS[Math.floor(rnd() * WORDS.length)] ?? 'note');
    if (line.length === 12) {
      lines.push(`${line.join(' ')}.`);
      line = [];
    }
  }
  if (line.length) lines.push(`${line.join(' ')}.`);
  return lines.join('\n');
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export const DEMO_SYSTEM = 'You are a careful senior engineer helping with a billing service migration.';

/** The user's message of turn `turn` (1-based). Turn 1 plants a fact the user asks to keep. */
export function userTurn(turn: number): string {
  const head =
    turn === 1
      ? 'We are migrating the billing service. Remember this: the rollback tag is FACT-ROLLBACK-7731.\nHere are my notes for step 1:'
      : `Notes for step ${turn} of the migration:`;
  return `${head}\n${notes(turn, 520)}\nWhat should we check next?`;
}

/** The assistant's scripted answer after turn `turn` (the same in both runs, so both send the same history). */
export function assistantTurn(turn: number): string {
  return `Step ${turn}: checked. Next, verify the ledger export and the retry queue before step ${turn + 1}.`;
}

/** The history a client sends on turn `turn`: everything so far plus the new user message. */
export function historyFor(turn: number): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: DEMO_SYSTEM }];
  for (let t = 1; t < turn; t++) {
    messages.push({ role: 'user', content: userTurn(t) }, { role: 'assistant', content: assistantTurn(t) });
  }
  messages.push({ role: 'user', content: userTurn(turn) });
  return messages;
}

export const DEMO_TURNS = 12;
