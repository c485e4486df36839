import { KEPT_TOOL_RESULTS, planResultClearing } from './result-clearing';
import { RECALL_TOOLS } from './recall-tools';
import type { NeutralMessage } from './types';

const counter = { charsPerToken: 4, factor: 1 };
const base = { callIds: [], resultIds: [], toolCalls: [], userTyped: false, spillable: false, digest: 'd' };
const call = (id: string, name = 'read_file'): NeutralMessage => ({
  ...base,
  role: 'assistant',
  text: '',
  chars: 40,
  callIds: [id],
  toolCalls: [{ name, args: '{}' }],
});
const result = (id: string, text: string): NeutralMessage => ({
  ...base,
  role: 'tool',
  text,
  chars: text.length,
  resultIds: [id],
});
const output = (n: number): string =>
  `header\nfile ${n} ends with artifact ART-${1000 + n}\n${'x'.repeat(4000)}`;

function session(uses: number, recallAt?: number): NeutralMessage[] {
  const out: NeutralMessage[] = [
    { ...base, role: 'user', text: 'Read them.', chars: 10, userTyped: true, spillable: true },
  ];
  for (let i = 1; i <= uses; i++) {
    out.push(call(`c${i}`, i === recallAt ? RECALL_TOOLS.readSpan : 'read_file'), result(`c${i}`, output(i)));
  }
  return out;
}

describe('planResultClearing (issue 32 item 3)', () => {
  it('clears every result but the newest three, whatever the need, each with the line that holds its value', () => {
    const messages = session(8);
    const plan = planResultClearing(messages, { keep: KEPT_TOOL_RESULTS, enough: 100, counter })!;
    expect(plan.cleared.map((c) => c.index)).toEqual([2, 4, 6, 8, 10]);
    expect(plan.cleared[0]).toMatchObject({ tool: 'read_file', gist: 'file 1 ends with artifact ART-1001' });
    expect(plan.tokens).toBeGreaterThan(5 * 900);
  });

  it('clears the same results for a session one use longer, plus the one that left the newest three', () => {
    const before = planResultClearing(session(8), { keep: 3, enough: 100, counter })!;
    const after = planResultClearing(session(9), { keep: 3, enough: 100, counter })!;
    expect(after.cleared.map((c) => c.index)).toEqual([...before.cleared.map((c) => c.index), 12]);
  });

  it("never clears a recall tool's answer, and clears nothing when that cannot remove what is needed", () => {
    const messages = session(6, 2);
    const plan = planResultClearing(messages, { keep: 3, enough: 100, counter })!;
    expect(plan.cleared.map((c) => c.index)).toEqual([2, 6]);
    expect(planResultClearing(messages, { keep: 3, enough: plan.tokens + 1, counter })).toBeUndefined();
    expect(planResultClearing(session(3), { keep: 3, enough: 1, counter })).toBeUndefined();
  });
});
