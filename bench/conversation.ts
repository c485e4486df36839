// Deterministic agent sessions for the compaction benchmarks: a system prompt, a tools array, and turns of
// user request -> assistant tool call -> tool result -> assistant answer, every message distinct.
import { filler } from './support';

export type ChatMessage = Record<string, unknown>;

export interface SessionShape {
  userChars: number;
  toolResultChars: number;
  answerChars: number;
  seed: number;
}

export const TOOLS = [
  ['read_file', 'Read a file of the repository and return its text.'],
  ['run_tests', 'Run the test suite, or one file of it, and return the report.'],
  ['search_code', 'Search the repository for a regular expression and return the matching lines.'],
  ['apply_patch', 'Apply a unified diff to the working tree.'],
].map(([name, description]) => ({
  type: 'function',
  function: {
    name,
    description,
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' }, pattern: { type: 'string' }, diff: { type: 'string' } },
    },
  },
}));

export const SYSTEM_PROMPT = `You are a coding agent working in a TypeScript monorepo. ${filler(3000, 7)}`;

/** The four messages of turn `t` (1-based): user, assistant tool call, tool result, assistant answer. */
export function turnMessages(t: number, shape: SessionShape): ChatMessage[] {
  const s = shape.seed * 1000 + t * 10;
  const id = `call_${shape.seed}_${t}`;
  const name = TOOLS[t % TOOLS.length]!.function.name;
  return [
    { role: 'user', content: `Turn ${t}: ${filler(shape.userChars, s + 1)}` },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id,
          type: 'function',
          function: {
            name,
            arguments: JSON.stringify({ path: `src/module-${t}.ts`, pattern: filler(160, s + 2) }),
          },
        },
      ],
    },
    { role: 'tool', tool_call_id: id, content: `Result ${t}: ${filler(shape.toolResultChars, s + 3)}` },
    { role: 'assistant', content: `Answer ${t}: ${filler(shape.answerChars, s + 4)}` },
  ];
}

/** What the client sends on turn `t`: the system prompt, turns 1..t-1 whole, and turn t's user message. */
export function requestForTurn(t: number, shape: SessionShape): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: SYSTEM_PROMPT }];
  for (let k = 1; k < t; k += 1) messages.push(...turnMessages(k, shape));
  messages.push(turnMessages(t, shape)[0]!);
  return messages;
}

/** A session of `turns` whole turns plus a final user message. */
export function chatRequest(turns: number, shape: SessionShape, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    model: 'stub-model',
    messages: requestForTurn(turns + 1, shape),
    tools: TOOLS,
    max_tokens: 256,
    ...extra,
  });
}
