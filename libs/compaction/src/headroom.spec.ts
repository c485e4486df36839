import { requestChars, tokensForChars } from './estimate';
import { PASTE_MIN_TOKENS, previewSavings } from './headroom';
import { planCompaction, type PlanInput } from './planner';
import type { BudgetInfo, NeutralMessage } from './types';

// One char per token; each message's `chars` is what it costs (the 12-char overhead included).
const counter = { charsPerToken: 1, factor: 1 };
const PASTE = 2500;

function message(role: NeutralMessage['role'], tokens: number, i: number): NeutralMessage {
  return {
    role,
    text: `message ${i}`,
    chars: tokens - 12,
    callIds: [],
    resultIds: [],
    toolCalls: [],
    userTyped: role === 'user',
    spillable: role !== 'system',
    digest: `d${i}`,
  };
}

/** A system message, then `turns` turns of a user paste and a short answer, then the newest paste. */
function pastes(turns: number, pasteTokens = PASTE): NeutralMessage[] {
  const out = [message('system', 100, 0)];
  for (let t = 0; t < turns; t++) {
    out.push(message('user', pasteTokens, out.length));
    out.push(message('assistant', 100, out.length));
  }
  out.push(message('user', pasteTokens, out.length));
  return out;
}

function input(
  messages: NeutralMessage[],
  budget: BudgetInfo,
  headroomTurns: number,
  memo?: PlanInput['memo'],
) {
  const requestTokens = tokensForChars(requestChars(messages, 0), counter);
  const keep = { fraction: 0.2, headroomTurns };
  return { messages, fixedChars: 0, counter, budget, keep, requestTokens, memo } satisfies PlanInput;
}

describe('room for the next turns (ADR 0021)', () => {
  const budget: BudgetInfo = { window: 20_000, budget: 7000, reserve: 0, reserveClamped: false };

  it('reuses the sticky cut with its older pastes previewed, where before it made a new cut', () => {
    // Cut at 3 (summary 200 tokens): the kept tail is three pastes, 8,000 tokens with the block, over 7,000.
    const messages = pastes(3);
    const memo = { cut: 3, summaryTokens: 200 };
    expect(planCompaction(input(messages, budget, 0, memo))).toMatchObject({ action: 'compact', from: 3 });
    const plan = planCompaction(input(messages, budget, 2, memo));
    expect(plan).toMatchObject({ action: 'reuse', cut: 3 });
    expect(plan.action === 'reuse' && plan.tokens).toBeLessThanOrEqual(budget.budget);
  });

  it('never counts the newest typed message or a message under PASTE_MIN_TOKENS as previewed', () => {
    expect(previewSavings(pastes(0), 1, { counter })).toBe(0);
    expect(previewSavings(pastes(2, PASTE_MIN_TOKENS - 1), 1, { counter })).toBe(0);
    expect(previewSavings(pastes(2), 1, { counter })).toBeGreaterThan(2 * (PASTE - 1000));
  });

  it('makes a new cut whose kept tail leaves room for two more pastes: the minimum of four messages gives way', () => {
    // No memo: before, the 4-message minimum kept two pastes (cut at 3: 7,700 tokens, over the budget already).
    const messages = pastes(3);
    expect(planCompaction(input(messages, budget, 0))).toEqual({ action: 'compact', from: 0, cut: 3 });
    expect(planCompaction(input(messages, budget, 2))).toEqual({ action: 'compact', from: 0, cut: 7 });
  });

  it('changes nothing where turns are small: the fraction and the minimum decide as before', () => {
    const small = pastes(12, 100);
    const tight: BudgetInfo = { window: 2000, budget: 1000, reserve: 0, reserveClamped: false };
    const before = planCompaction(input(small, tight, 0));
    expect(before.action).toBe('compact');
    expect(planCompaction(input(small, tight, 2))).toEqual(before);
  });
});
