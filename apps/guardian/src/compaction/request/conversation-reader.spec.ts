import fc from 'fast-check';

import { canonicalDigest, prefixHashes } from '@guardian/compaction';

import { conversationPrefixHashes, requestBytes } from '../../formats/format-adapter';
import { ConversationReader } from './conversation-reader';
import { anthropicAdapter } from '../../formats/anthropic.adapter';
import { chatAdapter } from '../../formats/chat.adapter';
import type { FormatAdapter, ParsedConversation } from '../../formats/format-adapter';
import { responsesAdapter } from '../../formats/responses.adapter';

const opts = { countTools: true, sessionKey: '' };

function conv(reader: ConversationReader, adapter: FormatAdapter, body: unknown): ParsedConversation {
  const read = reader.read(adapter, Buffer.from(JSON.stringify(body)), opts);
  if (read.kind !== 'conversation') throw new Error(`expected a conversation, got ${read.kind}`);
  return read.conv;
}

/** What the reader must agree with: the whole body parsed, then the adapter, then every digest from scratch. */
function fromScratch(adapter: FormatAdapter, body: unknown) {
  const c = adapter.parse(JSON.parse(JSON.stringify(body)), { countTools: true })!;
  c.messages.forEach((m, i) => (m.digest = canonicalDigest(c.items[i])));
  return {
    messages: c.messages,
    items: c.items,
    json: c.json,
    fixedChars: c.fixedChars,
    hashes: prefixHashes(c.messages),
  };
}

/** The reader's conversation is what reading `body` from scratch gives: items, messages, fixed size, prefix hashes. */
function expectAsFromScratch(c: ParsedConversation, body: unknown): ReturnType<typeof fromScratch> {
  // The hashes first: working them out fills in the digests the messages are compared with.
  const hashes = conversationPrefixHashes(c);
  const expected = fromScratch(chatAdapter, body);
  expect(c.items).toEqual(expected.items);
  expect(c.messages).toEqual(expected.messages);
  expect(c.fixedChars).toBe(expected.fixedChars);
  expect(hashes).toEqual(expected.hashes);
  return expected;
}

const turn = (n: number) => [
  { role: 'user', content: `question ${n}: ${'why '.repeat(n)}` },
  {
    role: 'assistant',
    content: `answer ${n}`,
    tool_calls: [{ id: `c${n}`, type: 'function', function: { name: 'ls', arguments: '{}' } }],
  },
  { role: 'tool', tool_call_id: `c${n}`, content: `result ${n}` },
];

function chatTurns(n: number) {
  return {
    model: 'm',
    tools: [{ type: 'function', function: { name: 'ls' } }],
    messages: [
      { role: 'system', content: 'be brief' },
      ...Array.from({ length: n }, (_, i) => turn(i + 1)).flat(),
    ],
    max_tokens: 10,
  };
}

describe('ConversationReader', () => {
  it('reads a growing conversation as JSON.parse and the adapter would, reusing what was resent', () => {
    const reader = new ConversationReader();
    let previous: ParsedConversation | undefined;
    for (let n = 1; n <= 12; n++) {
      const body = chatTurns(n);
      const c = conv(reader, chatAdapter, body);
      expect(c.json).toEqual(expectAsFromScratch(c, body).json);
      if (previous) {
        // Every message the client sent again is the same object as last turn's: read, digested and hashed once.
        for (let i = 0; i < previous.messages.length; i++) expect(c.messages[i]).toBe(previous.messages[i]);
        expect(c.messages[previous.messages.length]).not.toBe(undefined);
      }
      previous = c;
    }
  });

  it('reads again an item whose bytes changed, even at the same length', () => {
    const reader = new ConversationReader();
    const first = conv(reader, chatAdapter, chatTurns(3));
    const body = chatTurns(3);
    body.messages[4] = { ...body.messages[4]!, content: 'answer X' };
    const second = conv(reader, chatAdapter, body);
    expect(second.messages[3]).toBe(first.messages[3]);
    expect(second.messages[4]).not.toBe(first.messages[4]);
    expect(second.messages[4]!.text).toBe('answer X');
    expect(conversationPrefixHashes(second)).toEqual(fromScratch(chatAdapter, body).hashes);
  });

  it('over sessions whose clients edit, rewrite and extend their history, reads what a fresh parse reads', () => {
    // Issue 16: one compare stands for last turn's items when the request repeats or extends them; an edit anywhere
    // (at the same length too), a dropped item, another model or tools must still be read afresh.
    type Step =
      | { kind: 'append'; turns: number }
      | { kind: 'edit'; at: number; sameLength: boolean }
      | { kind: 'drop'; at: number }
      | { kind: 'model' | 'tools' | 'repeat' };
    const step: fc.Arbitrary<Step> = fc.oneof(
      {
        weight: 4,
        arbitrary: fc.record({ kind: fc.constant('append' as const), turns: fc.integer({ min: 1, max: 3 }) }),
      },
      {
        weight: 3,
        arbitrary: fc.record({ kind: fc.constant('edit' as const), at: fc.nat(), sameLength: fc.boolean() }),
      },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }) },
      {
        weight: 2,
        arbitrary: fc.record({
          kind: fc.constantFrom('model' as const, 'tools' as const, 'repeat' as const),
        }),
      },
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.array(step, { minLength: 1, maxLength: 12 }),
        (start, steps) => {
          const reader = new ConversationReader();
          const body = chatTurns(start) as ReturnType<typeof chatTurns> & { model: string };
          let n = start;
          for (const s of [{ kind: 'repeat' } as Step, ...steps]) {
            const items = body.messages as { role: string; content: string }[];
            if (s.kind === 'append') for (let k = 0; k < s.turns; k++) items.push(...turn(++n));
            else if (s.kind === 'edit' && items.length > 0) {
              const i = s.at % items.length;
              const was = items[i]!.content;
              const content = s.sameLength
                ? `${was.slice(0, -1)}${was.endsWith('#') ? '%' : '#'}`
                : `${was} edited`;
              items[i] = { ...items[i]!, content };
            } else if (s.kind === 'drop' && items.length > 1) items.splice(s.at % items.length, 1);
            else if (s.kind === 'model') body.model = `${body.model}x`;
            else if (s.kind === 'tools')
              body.tools = [...body.tools, { type: 'function', function: { name: 'cat' } }];
            const c = conv(reader, chatAdapter, body);
            expectAsFromScratch(c, body);
          }
        },
      ),
      { numRuns: 120 },
    );
  });

  it('tells malformed JSON from a shape the engine does not take', () => {
    const reader = new ConversationReader();
    expect(reader.read(chatAdapter, Buffer.from('{"model":"m","messages":['), opts).kind).toBe('not-json');
    expect(reader.read(chatAdapter, Buffer.from('[1]'), opts).kind).toBe('not-understood');
    expect(reader.read(chatAdapter, Buffer.from('{"model":"m","messages":[null]}'), opts).kind).toBe(
      'not-understood',
    );
    const stateful = { model: 'm', input: [{ role: 'user', content: 'x' }], previous_response_id: 'r' };
    expect(reader.read(responsesAdapter, Buffer.from(JSON.stringify(stateful)), opts).kind).toBe(
      'not-understood',
    );
    // A bad escape inside an item's string: JSON.parse of the whole body has the last word.
    expect(
      reader.read(
        chatAdapter,
        Buffer.from('{"model":"m","messages":[{"role":"user","content":"\\x"}]}'),
        opts,
      ).kind,
    ).toBe('not-json');
  });

  it.each([
    ['chat', chatAdapter],
    ['messages', anthropicAdapter],
    ['responses', responsesAdapter],
  ] as const)(
    '%s: agrees with JSON.parse and the adapter over random shapes read twice',
    (_route, adapter) => {
      const reader = new ConversationReader();
      const item = fc.oneof(
        fc.record({
          role: fc.constantFrom('system', 'user', 'assistant', 'developer', 'tool'),
          content: fc.string(),
        }),
        fc.record({
          type: fc.constantFrom('message', 'function_call', 'reasoning'),
          role: fc.constant('user'),
          content: fc.jsonValue({ maxDepth: 2 }),
          call_id: fc.string(),
        }),
        fc.jsonValue({ maxDepth: 2 }),
      );
      fc.assert(
        fc.property(fc.array(item, { maxLength: 6 }), fc.array(item, { maxLength: 3 }), (head, tail) => {
          for (const items of [head, [...head, ...tail]]) {
            const body = { model: 'm', [adapter.itemsKey]: items, system: 'sys', instructions: 'ins' };
            const text = Buffer.from(JSON.stringify(body));
            const read = reader.read(adapter, text, opts);
            const expected = adapter.parse(JSON.parse(text.toString('utf8')), { countTools: true });
            if (!expected) {
              expect(read.kind).toBe('not-understood');
              continue;
            }
            expect(read.kind).toBe('conversation');
            if (read.kind !== 'conversation') continue;
            expect(read.conv.items).toEqual(expected.items);
            expect(read.conv.messages.map((m) => ({ ...m, digest: '' }))).toEqual(expected.messages);
            expect(conversationPrefixHashes(read.conv)).toEqual(
              prefixHashes(
                expected.messages.map((m, i) => ({ ...m, digest: canonicalDigest(expected.items[i]) })),
              ),
            );
          }
        }),
        { numRuns: 300 },
      );
    },
  );

  it.each([
    ['chat', chatAdapter],
    ['messages', anthropicAdapter],
    ['responses', responsesAdapter],
  ] as const)(
    '%s: a rebuilt request copied from the client bytes means what JSON.stringify of it means',
    (_r, adapter) => {
      const reader = new ConversationReader();
      const item = fc.record({
        role: fc.constantFrom('system', 'user', 'assistant'),
        content: fc.oneof(
          fc.string(),
          fc.array(fc.record({ type: fc.constant('text'), text: fc.string() }), { maxLength: 2 }),
        ),
      });
      fc.assert(
        fc.property(
          fc.array(item, { minLength: 1, maxLength: 8 }),
          fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
          fc.option(fc.string()),
          fc.constantFrom(undefined, 2),
          (items, keepMask, summary, indent) => {
            const body = {
              model: 'm',
              system: 'sys',
              tools: [{ name: 't' }],
              [adapter.itemsKey]: items,
              stream: false,
            };
            const read = reader.read(adapter, Buffer.from(JSON.stringify(body, null, indent)), opts);
            if (read.kind !== 'conversation') return;
            const keep = items.map((_x, i) => i).filter((i) => keepMask[i] || i === items.length - 1);
            const replaceText = new Map(keep.length > 1 ? [[keep[0]!, 'cut short']] : []);
            const rebuilt = adapter.rebuild(read.conv, {
              keep,
              summaryBlock: summary ?? undefined,
              replaceText,
            });
            const bytes = requestBytes(rebuilt, read.conv, adapter.itemsKey);
            expect(JSON.parse(bytes.toString('utf8'))).toEqual(JSON.parse(JSON.stringify(rebuilt)));
          },
        ),
        { numRuns: 300 },
      );
    },
  );
});
