// The state bench's sessions (issue 32 item 6): a seeded synthetic software project with state items of five kinds,
// each stated once in the first turns, and a probe per item asked only after compaction. Values are `FACT-...` tokens
// so the scorer is an exact string match and the stub's `recall` reader can answer them (recall-answer.ts).
import { filler } from '../support';
import { factValue } from './harness';

export const KINDS = ['exact', 'relation', 'tool', 'corrected', 'task'] as const;
export type StateKind = (typeof KINDS)[number];

/** A chat message as the bench sends it: plain turns, and the assistant's tool calls with their results. */
export type StateMessage =
  | { role: 'system' | 'user'; content: string }
  | {
      role: 'assistant';
      content: string;
      tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
    }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface StateItem {
  kind: StateKind;
  /** The value a probe's answer must hold. */
  value: string;
  /** For a corrected item, the value it replaced: carried only when this one is absent or marked superseded. */
  stale?: string;
  question: string;
}

/** Messages of one turn, in order. */
export type TurnMessages = StateMessage[];

export interface StateSession {
  items: StateItem[];
  /** The turns that state the items (and their corrections), in order; work turns follow as many as needed. */
  opening: TurnMessages[];
  /** The seed's n-th work turn after the opening. */
  work(n: number): TurnMessages;
}

const SUBJECTS = ['billing', 'search', 'gateway', 'ingest', 'reports', 'auth', 'export', 'scheduler'];
const TOOLS = ['run_tests', 'build_image', 'query_db', 'deploy_preview'];

function work(seed: number, n: number, extra?: string): string {
  return `${extra ? `${extra}\n` : ''}Work item ${n}: ${filler(420, seed * 1000 + n)}`;
}

function answer(seed: number, n: number): StateMessage {
  return { role: 'assistant', content: `Done with step ${n}. ${filler(1400, seed * 7777 + n)}` };
}

/** A user turn and its scripted answer. */
function plain(seed: number, n: number, text?: string): TurnMessages {
  return [{ role: 'user', content: work(seed, n, text) }, answer(seed, n)];
}

/** Twelve items (three exact values, three relations, two tool results, two corrections, the task and next step). */
export function stateSession(seed: number): StateSession {
  const value = (i: number): string => factValue(seed, i);
  const subject = (i: number): string => SUBJECTS[(seed + i) % SUBJECTS.length]!;
  const items: StateItem[] = [];
  const opening: TurnMessages[] = [];
  let n = 0;
  const say = (text: string): void => {
    n += 1;
    opening.push(plain(seed, n, text));
  };
  for (let i = 0; i < 3; i++) {
    const v = value(i);
    say(`The ${subject(i)} service listens on internal port label ${v}.`);
    items.push({
      kind: 'exact',
      value: v,
      question: `Which port label does the ${subject(i)} service listen on?`,
    });
  }
  for (let i = 3; i < 6; i++) {
    const v = value(i);
    say(`The ${subject(i)} service depends on the message queue ${v}.`);
    items.push({
      kind: 'relation',
      value: v,
      question: `Which message queue does the ${subject(i)} service depend on?`,
    });
  }
  for (let i = 6; i < 8; i++) {
    const v = value(i);
    const tool = TOOLS[(seed + i) % TOOLS.length]!;
    const id = `call_${seed}_${i}`;
    n += 1;
    opening.push([
      { role: 'user', content: work(seed, n, `Run ${tool} for the ${subject(i)} service.`) },
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          { id, type: 'function', function: { name: tool, arguments: `{"target":"${subject(i)}"}` } },
        ],
      },
      { role: 'tool', tool_call_id: id, content: `${tool} for ${subject(i)} finished: artifact id ${v}.` },
      answer(seed, n),
    ]);
    items.push({
      kind: 'tool',
      value: v,
      question: `What artifact id did ${tool} report for ${subject(i)}?`,
    });
  }
  for (let i = 8; i < 10; i++) {
    const old = value(i);
    const v = value(i + 4);
    say(`The ${subject(i)} release branch is ${old}.`);
    say(`Update: the ${subject(i)} release branch is now ${v}.`);
    items.push({
      kind: 'corrected',
      value: v,
      stale: old,
      question: `What is the ${subject(i)} release branch?`,
    });
  }
  const task = value(10);
  const next = value(11);
  say(
    `Current task: migrate the ${subject(10)} tables, tracked as ${task}. Next step: run the backfill job ${next}.`,
  );
  items.push({ kind: 'task', value: task, question: 'Which ticket tracks the current migration task?' });
  items.push({ kind: 'task', value: next, question: 'Which backfill job is the next step?' });
  return { items, opening, work: (k) => plain(seed, n + k) };
}
