import { tokensForChars } from './estimate';
import { OMITTED_PIN_LABEL, spillPointer, spillText } from './spill';
import type { Counter } from './types';

const counter: Counter = { charsPerToken: 3.5, factor: 1 };
const REF = '20261030-143012/0002.json';

const pointer =
  (position: number, ref: string | undefined = REF) =>
  (omittedTokens: number, originalTokens: number): string =>
    spillPointer({ position, originalTokens, ref, omittedTokens });

/** `count` numbered lines of about `width` characters. */
const linesOf = (count: number, width: number): string =>
  Array.from(
    { length: count },
    (_, i) => `line ${String(i).padStart(5, '0')} ${'x'.repeat(width - 11)}`,
  ).join('\n');

function split(out: string, pointerLine: string): { head: string; tail: string } {
  const at = out.indexOf(`\n${pointerLine}\n`);
  expect(at).toBeGreaterThan(0);
  return { head: out.slice(0, at), tail: out.slice(at + pointerLine.length + 2) };
}

describe('spillPointer', () => {
  it("is the seed's pointer line", () => {
    expect(spillPointer({ position: 3, originalTokens: 5714, ref: REF, omittedTokens: 5528 })).toBe(
      '[context-guardian: message 3 (5714 tokens) archived as 20261030-143012/0002.json -- the middle 5528 tokens are omitted; with the recall MCP server, search_spans/read_span open the full text]',
    );
  });

  it('says so when the span is not written yet', () => {
    expect(spillPointer({ position: 1, originalTokens: 10, ref: undefined, omittedTokens: 5 })).toContain(
      'message 1 (10 tokens) not archived yet -- the middle 5 tokens are omitted',
    );
  });
});

describe('spillText', () => {
  it.each([
    { name: 'many short lines', text: linesOf(4000, 60), room: 2000 },
    { name: 'long lines', text: linesOf(300, 900), room: 8000 },
    { name: 'a small room', text: linesOf(500, 40), room: 300 },
    { name: 'calibrated up', text: linesOf(4000, 60), room: 2000, factor: 1.3 },
  ])(
    '$name: head and tail about 2:1 at line boundaries, with the pointer between, within the room',
    (row) => {
      const c = { ...counter, factor: row.factor ?? 1 };
      const cut = spillText(row.text, { roomTokens: row.room, counter: c, pointer: pointer(3) })!;
      expect(cut.originalTokens).toBe(tokensForChars(row.text.length, c));
      const line = spillPointer({
        position: 3,
        originalTokens: cut.originalTokens,
        ref: REF,
        omittedTokens: cut.omittedTokens,
      });
      const { head, tail } = split(cut.text, line);
      // Line boundaries: the head is whole lines from the start, the tail whole lines to the end.
      expect(row.text.startsWith(`${head}\n`)).toBe(true);
      expect(row.text.endsWith(`\n${tail}`)).toBe(true);
      const ratio = head.length / tail.length;
      expect(ratio).toBeGreaterThan(1.5);
      expect(ratio).toBeLessThan(2.7);
      expect(cut.omittedTokens).toBe(cut.originalTokens - tokensForChars(head.length + 1 + tail.length, c));
      expect(tokensForChars(cut.text.length, c)).toBeLessThanOrEqual(row.room);
    },
  );

  it('cuts a single long line by characters', () => {
    const text = `BEGIN${'y'.repeat(50000)}FINISH`;
    const cut = spillText(text, { roomTokens: 3000, counter, pointer: pointer(2) })!;
    const line = spillPointer({
      position: 2,
      originalTokens: cut.originalTokens,
      ref: REF,
      omittedTokens: cut.omittedTokens,
    });
    const { head, tail } = split(cut.text, line);
    expect(head.startsWith('BEGIN')).toBe(true);
    expect(tail.endsWith('yFINISH')).toBe(true);
    expect(head.length / tail.length).toBeCloseTo(2, 1);
    expect(tokensForChars(cut.text.length, counter)).toBeLessThanOrEqual(3000);
  });

  it('fills the room it is given, not a fraction of it', () => {
    const cut = spillText(linesOf(4000, 60), { roomTokens: 2000, counter, pointer: pointer(3) })!;
    expect(tokensForChars(cut.text.length, counter)).toBeGreaterThan(2000 * 0.8);
  });

  it.each([
    { name: 'well inside the room', chars: 1000, room: 2000 },
    { name: 'exactly the room', chars: 7000, room: 2000 },
    { name: 'just inside the room', chars: 6900, room: 2000 },
  ])('leaves a text that already fits alone: $name', ({ chars, room }) => {
    expect(
      spillText(linesOf(Math.round(chars / 60), 60).slice(0, chars), {
        roomTokens: room,
        counter,
        pointer: pointer(1),
      }),
    ).toBeUndefined();
  });

  it('gives up when the room cannot even hold the pointer', () => {
    expect(spillText(linesOf(1000, 60), { roomTokens: 20, counter, pointer: pointer(1) })).toBeUndefined();
  });
});

describe('spillText keeps the pins of the message it cuts', () => {
  const pin = 'Remember this: the deploy key is ZEBRA-7431.';

  it('carries a pin from the omitted middle verbatim after the pointer line', () => {
    const text = `${linesOf(200, 60)}\n${pin}\n${linesOf(200, 60)}`;
    const cut = spillText(text, { roomTokens: 600, counter, pointer: pointer(3), keep: [pin] })!;
    const lines = cut.text.split('\n');
    const at = lines.findIndex((l) => l.startsWith('[context-guardian: message 3'));
    expect(lines[at + 1]).toBe(`${OMITTED_PIN_LABEL}${pin}`);
    expect(cut.text.split(pin)).toHaveLength(2);
    expect(Math.ceil(cut.text.length / counter.charsPerToken)).toBeLessThanOrEqual(600);
  });

  it('does not repeat a pin the head already holds', () => {
    const text = `${pin}\n${linesOf(400, 60)}`;
    const cut = spillText(text, { roomTokens: 600, counter, pointer: pointer(1), keep: [pin] })!;
    expect(cut.text.startsWith(pin)).toBe(true);
    expect(cut.text).not.toContain(OMITTED_PIN_LABEL);
  });
});
