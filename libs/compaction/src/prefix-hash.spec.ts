import { sortedKeyJson, prefixHashes, hashText } from './prefix-hash';
import type { NeutralMessage } from './types';

/** A message whose digest is taken from the original item, as the format adapters do. */
function fromItem(role: NeutralMessage['role'], item: Record<string, unknown>): NeutralMessage {
  return {
    role,
    text: '',
    chars: 0,
    callIds: [],
    resultIds: [],
    toolCalls: [],
    userTyped: role === 'user',
    spillable: true,
    digest: hashText(sortedKeyJson(item)),
  };
}

describe('sortedKeyJson', () => {
  it.each([
    [{ b: 1, a: [3, { d: null, c: 'x' }] }, '{"a":[3,{"c":"x","d":null}],"b":1}'],
    [{ a: undefined, b: 2 }, '{"b":2}'],
    [[1, 'two', true, null], '[1,"two",true,null]'],
    ['text "quoted"', '"text \\"quoted\\""'],
    [42, '42'],
  ])('%j -> %s', (value, json) => {
    expect(sortedKeyJson(value)).toBe(json);
  });
});

describe('prefixHashes', () => {
  const system = { role: 'system', content: 'You are terse.' };
  const user = { role: 'user', content: 'Hi', name: 'ada' };
  const call = {
    role: 'assistant',
    tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
  };

  it('gives the same hashes for the same content whatever the key order', () => {
    const a = [fromItem('system', system), fromItem('user', user), fromItem('assistant', call)];
    const b = [
      fromItem('system', { content: 'You are terse.', role: 'system' }),
      fromItem('user', { name: 'ada', content: 'Hi', role: 'user' }),
      fromItem('assistant', {
        tool_calls: [{ function: { arguments: '{}', name: 'f' }, type: 'function', id: 'c1' }],
        role: 'assistant',
      }),
    ];
    expect(prefixHashes(b)).toEqual(prefixHashes(a));
  });

  it('has one hash per prefix, shared by every conversation with that prefix', () => {
    const short = [fromItem('system', system), fromItem('user', user)];
    const long = [...short, fromItem('assistant', call), fromItem('user', { role: 'user', content: 'more' })];
    const hs = prefixHashes(short);
    const hl = prefixHashes(long);
    expect(hs).toHaveLength(3);
    expect(hl).toHaveLength(5);
    expect(hl.slice(0, 3)).toEqual(hs);
    expect(new Set(hl).size).toBe(5);
    for (const h of hl) expect(h).toMatch(/^[0-9a-f]{64}$/);
  });

  it('tells different conversations apart', () => {
    const a = prefixHashes([fromItem('user', user), fromItem('assistant', call)]);
    const other = prefixHashes([fromItem('user', { ...user, content: 'Hi!' }), fromItem('assistant', call)]);
    const swapped = prefixHashes([fromItem('assistant', call), fromItem('user', user)]);
    expect(other[1]).not.toBe(a[1]);
    expect(other[2]).not.toBe(a[2]);
    expect(swapped[2]).not.toBe(a[2]);
    expect(prefixHashes([])).toEqual([a[0]]);
  });

  it('tells a system message from another message with the same digest', () => {
    const item = { content: 'same' };
    expect(prefixHashes([fromItem('system', item)])[1]).not.toBe(prefixHashes([fromItem('user', item)])[1]);
  });
});

describe('prefixHashes from known hashes', () => {
  it('extends the hashes of a leading part to the same hashes as from scratch', () => {
    const messages = ['a', 'b', 'c', 'd'].map((text, i): NeutralMessage => ({
      role: i === 0 ? 'system' : 'user',
      text,
      chars: 1,
      callIds: [],
      resultIds: [],
      toolCalls: [],
      userTyped: i > 0,
      spillable: true,
      digest: hashText(text),
    }));
    const all = prefixHashes(messages);
    for (let k = 0; k <= messages.length; k++)
      expect(prefixHashes(messages, prefixHashes(messages.slice(0, k)))).toEqual(all);
  });
});
