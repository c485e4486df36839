import {
  planToolClearing,
  toolResultPointer,
  TOOL_POINTER_MAX_CHARS,
  TOOL_POINTER_WITH_GIST_MAX_CHARS,
  type ToolUse,
} from './tool-clearing';

const use = (key: string, name: string, resultTokens: number, inputTokens = 10): ToolUse => ({
  key,
  name,
  resultTokens,
  inputTokens,
});

const uses = [use('a', 'read', 500), use('b', 'grep', 400), use('c', 'read', 300), use('d', 'bash', 200)];

describe('planToolClearing', () => {
  it('clears every use older than the newest `keep`, oldest first, pointers subtracted', () => {
    expect(planToolClearing(uses, { keep: 2, pointerTokens: 20 })).toEqual({
      results: ['a', 'b'],
      inputs: [],
      tokens: 480 + 380,
    });
  });

  it('stops once `enough` is cleared (guardian clears no more than the budget needs)', () => {
    expect(planToolClearing(uses, { keep: 1, pointerTokens: 20, enough: 450 })?.results).toEqual(['a']);
    expect(planToolClearing(uses, { keep: 1, pointerTokens: 20, enough: 500 })?.results).toEqual(['a', 'b']);
  });

  it('never touches an excluded tool, and clears the inputs of the tools it is asked to', () => {
    const plan = planToolClearing(uses, {
      keep: 1,
      pointerTokens: 20,
      excludeTools: ['grep'],
      clearInputs: ['read'],
    });
    expect(plan).toEqual({ results: ['a', 'c'], inputs: ['a', 'c'], tokens: 480 + 10 + 280 + 10 });
    expect(planToolClearing(uses, { keep: 3, pointerTokens: 20, clearInputs: true })?.inputs).toEqual(['a']);
  });

  it('clears nothing when less than `atLeast` would go, or when every result is no larger than its pointer', () => {
    expect(planToolClearing(uses, { keep: 3, pointerTokens: 20, atLeast: 481 })).toBeUndefined();
    expect(planToolClearing(uses, { keep: 3, pointerTokens: 20, atLeast: 480 })?.tokens).toBe(480);
    expect(
      planToolClearing([use('x', 'read', 15), use('y', 'read', 900)], { keep: 1, pointerTokens: 20 }),
    ).toBe(undefined);
    expect(planToolClearing(uses, { keep: 4, pointerTokens: 20 })).toBeUndefined();
  });

  it('is a function of its inputs: one more turn clears the same old results again, and more only if needed', () => {
    const before = planToolClearing(uses, { keep: 1, pointerTokens: 20, enough: 450 })!;
    const after = planToolClearing([...uses, use('e', 'read', 100)], {
      keep: 1,
      pointerTokens: 20,
      enough: 450,
    })!;
    expect(after.results.slice(0, before.results.length)).toEqual(before.results);
  });
});

describe('toolResultPointer', () => {
  it('names the tool, the size and the span, and fits the planned maximum', () => {
    const p = toolResultPointer({ tool: 'read_file', tokens: 1234, ref: 'run-1/000003' });
    expect(p).toContain('read_file');
    expect(p).toContain('1234 tokens');
    expect(p).toContain('archived as run-1/000003');
    expect(p.length).toBeLessThanOrEqual(TOOL_POINTER_MAX_CHARS);
    expect(toolResultPointer({ tool: 'x', tokens: 1 })).toContain('not archived');
  });

  it("quotes the result's line, cut to fit the planned maximum with a quote", () => {
    const p = toolResultPointer({
      tool: 'run_tests',
      tokens: 80,
      ref: 'r/0001.json',
      gist: 'artifact id ART-5521',
    });
    expect(p).toMatch(/; it read: "artifact id ART-5521"\]$/);
    const long = toolResultPointer({
      tool: 't'.repeat(64),
      tokens: 99_999_999,
      ref: 'r'.repeat(80),
      gist: 'g'.repeat(5000),
    });
    expect(long.length).toBe(TOOL_POINTER_WITH_GIST_MAX_CHARS);
  });
});
