import { requestChars, tokensForChars } from './estimate';
import { keepPreviousTurn, PASTE_MIN_TOKENS, PREVIOUS_TURN_MAX_TOKENS, previewSavings } from './headroom';
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
    // No memo: before, the 4-message minimum kept two pastes (cut at 3: 7,700 tokens, over the budget already). The
    // room for two more pastes leaves only the newest turn (cut 7), and the turn before it is kept as well, its paste
    // to be cut to the short preview (cut 5): a cut at 7 would evict the answer at 6, which only this request holds.
    const messages = pastes(3);
    expect(planCompaction(input(messages, budget, 0))).toEqual({ action: 'compact', from: 0, cut: 3 });
    expect(planCompaction(input(messages, budget, 2))).toEqual({ action: 'compact', from: 0, cut: 5 });
  });

  it('changes nothing where turns are small: the fraction and the minimum decide as before', () => {
    const small = pastes(12, 100);
    const tight: BudgetInfo = { window: 2000, budget: 1000, reserve: 0, reserveClamped: false };
    const before = planCompaction(input(small, tight, 0));
    expect(before.action).toBe('compact');
    expect(planCompaction(input(small, tight, 2))).toEqual(before);
  });
});

describe('a new cut keeps the turn before the newest (ADR 0021, amended)', () => {
  const budget: BudgetInfo = { window: 20_000, budget: 7000, reserve: 0, reserveClamped: false };
  const plan = (messages: NeutralMessage[], memo?: PlanInput['memo']) =>
    planCompaction(input(messages, budget, 2, memo));

  it('stops at the start of the turn before the newest, so the cut evicts only what the request before held', () => {
    // pastes(3): [system, u1, a2, u3, a4, u5, a6, u7]. The newest turn starts at 7; the turn before at 5.
    expect(keepPreviousTurn({ messages: short(pastes(3)), counter }, 0, 7)).toBe(5);
  });

  it('reuses the sticky cut when the turn before starts there, and cuts nothing without one', () => {
    // [system, u1, a2, u3, a4, u5] with 6,000-token pastes and 20-token answers: the newest paste alone nearly fills
    // the budget. With the sticky cut at 3 the turn before the newest starts there: no new cut, the rebuild cuts the
    // pastes (the newest too). Without a memo the cut is at 3, the start of that turn. In a conversation of two turns
    // the turn before the newest is the first one: nothing is cut, the spill alone does it.
    const big = short(pastes(2, 6000));
    expect(plan(big, { cut: 3, summaryTokens: 200 })).toMatchObject({ action: 'reuse', cut: 3 });
    expect(plan(big)).toEqual({ action: 'compact', from: 0, cut: 3 });
    expect(plan(short(pastes(1, 6000)))).toMatchObject({ action: 'no-cut' });
    // The rule before (GUARDIAN_CUT_HEADROOM_TURNS=0) made a new cut at the newest turn from the sticky one.
    expect(planCompaction(input(big, budget, 0, { cut: 3, summaryTokens: 200 }))).toMatchObject({
      action: 'compact',
      cut: 5,
    });
  });

  it('keeps nothing back when the turn before is over a preview once cut, or when the cut keeps more', () => {
    const messages = short(pastes(3));
    expect(keepPreviousTurn({ messages, counter }, 0, 7)).toBe(5);
    // A long answer in the turn before: it cannot be cut, and it is more than PREVIOUS_TURN_MAX_TOKENS.
    const longAnswer = messages.map((m, i) =>
      i === 6 ? message('assistant', PREVIOUS_TURN_MAX_TOKENS + 50, i) : m,
    );
    expect(keepPreviousTurn({ messages: longAnswer, counter }, 0, 7)).toBe(7);
    // Tool results are not cut either.
    const results = messages.map((m, i) => (i === 5 ? { ...m, spillable: false } : m));
    expect(keepPreviousTurn({ messages: results, counter }, 0, 7)).toBe(7);
    // A cut that is not the last allowed one keeps the turn before already.
    expect(keepPreviousTurn({ messages, counter }, 0, 5)).toBe(5);
  });
});

describe('where the newest message is cut whatever is cut before it (ADR 0021, amended)', () => {
  // The newest 6,000-token paste does not fit a 5,000 budget beside anything: the rebuild cuts it in every case.
  const budget: BudgetInfo = { window: 20_000, budget: 5000, reserve: 0, reserveClamped: false };
  const memo = { cut: 3, summaryTokens: 200 };
  const plan = (turns: number, m?: PlanInput['memo']) =>
    planCompaction(input(short(pastes(turns, 6000)), budget, 2, m));

  it('keeps the sticky cut while the turns before the newest, shortened, take a preview at most', () => {
    // One character is a token here: a short preview with its pointer is ~410 tokens, so one turn stays under 512.
    expect(plan(2, memo)).toEqual({ action: 'reuse', cut: 3, tokens: expect.any(Number) as number });
    // Without a memo the first turns are only spilled, under the same rule.
    expect(plan(1)).toMatchObject({ action: 'no-cut' });
  });

  it('makes a new cut once they take more, keeping the turn before the newest', () => {
    // From 3, the turns before the newest (at 7) are two: over a preview. The cut keeps one of them.
    expect(plan(3, memo)).toEqual({ action: 'compact', from: 3, cut: 5 });
  });
});

/** The same session with 20-token answers (one character is a token here, so a pointer alone is ~270 tokens). */
function short(messages: NeutralMessage[]): NeutralMessage[] {
  return messages.map((m, i) => (m.role === 'assistant' ? message('assistant', 20, i) : m));
}
