import { allowedCuts, evictedIndexes } from './cuts';
import type { NeutralMessage } from './types';

/** Compact conversation notation: `u` user, `a` assistant, `s` system, `a:1,2` calls 1 and 2, `t:1` answers 1. */
function conv(spec: string): NeutralMessage[] {
  return spec.split(' ').map((token, i) => {
    const [kind = '', ids = ''] = token.split(':');
    const idList = ids ? ids.split(',') : [];
    const role = ({ u: 'user', a: 'assistant', s: 'system', t: 'tool' } as const)[
      kind[0] as 'u' | 'a' | 's' | 't'
    ];
    const resultsInUser = kind === 'ur'; // Anthropic: tool_result blocks travel in a user message
    return {
      role: resultsInUser ? 'user' : role,
      text: `message ${i}`,
      chars: 10,
      callIds: kind === 'a' ? idList : [],
      resultIds: kind === 't' || resultsInUser ? idList : [],
      toolCalls: [],
      userTyped: kind === 'u',
      spillable: true,
      digest: `d${i}`,
    };
  });
}

function allowedList(spec: string): number[] {
  return allowedCuts(conv(spec)).flatMap((ok, i) => (ok ? [i] : []));
}

describe('allowedCuts', () => {
  it.each([
    { name: 'plain turns: every user message after the first', spec: 'u a u a u a', allowed: [2, 4] },
    { name: 'a system message is never the start of the tail', spec: 'u a u a s u s u', allowed: [2, 5, 7] },
    // A cut right after the leading system messages evicts nothing, so it is no cut (like cut 0).
    {
      name: 'a cut must evict a message: not right after leading system messages',
      spec: 's u a u a s u',
      allowed: [3, 6],
    },
    { name: 'several leading system messages', spec: 's s u a u', allowed: [4] },
    { name: 'a call answered right away', spec: 'u a:1 t:1 a u a', allowed: [4] },
    {
      name: 'a result several messages after its call (a user message in between)',
      spec: 'u a u a:1 a u t:1 a u',
      allowed: [2, 8],
    },
    {
      name: 'parallel calls answered out of order',
      spec: 'u a:1,2,3 t:3 t:1 u t:2 a u',
      allowed: [7],
    },
    {
      name: 'results carried in a user message (Anthropic tool_result)',
      spec: 'u a:1 ur:1 a u a:2 ur:2 a u',
      allowed: [4, 8],
    },
    {
      name: 'a call with no result yet leaves the cuts before it free',
      spec: 'u a u a:9 u',
      allowed: [2, 4],
    },
    { name: 'a result whose call is not in the request is no constraint', spec: 'u t:7 u a', allowed: [2] },
  ])('$name', ({ spec, allowed }) => {
    expect(allowedList(spec)).toEqual(allowed);
  });

  it('never allows cut 0 or cut n', () => {
    for (const spec of ['u', 'u u', 'u u u u', 's u u']) {
      const cuts = allowedCuts(conv(spec));
      expect(cuts).toHaveLength(conv(spec).length + 1);
      expect(cuts[0]).toBe(false);
      expect(cuts[cuts.length - 1]).toBe(false);
    }
  });

  it('never separates a call from a result that comes later, whatever lies between', () => {
    const messages = conv('u a:1,2 u t:2 a:3 t:1 u t:3 u a');
    const calls = new Map<string, number>();
    messages.forEach((m, i) => m.callIds.forEach((id) => calls.set(id, i)));
    allowedCuts(messages).forEach((ok, cut) => {
      if (!ok) return;
      messages.forEach((m, r) => {
        for (const id of m.resultIds) {
          const c = calls.get(id)!;
          expect(c < cut && cut <= r).toBe(false);
        }
      });
    });
  });
});

describe('evictedIndexes', () => {
  it('lists the non-system messages in [from, cut)', () => {
    const messages = conv('s u a s u a u');
    expect(evictedIndexes(messages, 0, 4)).toEqual([1, 2]);
    expect(evictedIndexes(messages, 4, 6)).toEqual([4, 5]);
    expect(evictedIndexes(messages, 2, 2)).toEqual([]);
  });
});
