import fc from 'fast-check';

import { outline, parseField, parseRange, rangeHas, stringField, withoutField } from './json-outline';

const buf = (text: string) => Buffer.from(text, 'utf8');

describe('outline', () => {
  it('finds each top-level member and the elements of the arrays asked for', () => {
    const text =
      ' { "model" : "qwen\\"3", "messages":[ {"role":"user","content":"hi"} , [1,{}], "x" ], "n": -1.5e3 } ';
    const body = buf(text);
    const o = outline(body, ['messages'])!;
    expect([...o.fields.keys()]).toEqual(['model', 'messages', 'n']);
    expect(stringField(body, o, 'model')).toBe('qwen"3');
    expect(parseField(body, o, 'n')).toBe(-1500);
    expect(o.items.get('messages')!.map((r) => parseRange(body, r))).toEqual([
      { role: 'user', content: 'hi' },
      [1, {}],
      'x',
    ]);
    expect(rangeHas(body, o.fields.get('messages')!, '"role"')).toBe(true);
    expect(rangeHas(body, o.fields.get('model')!, '"role"')).toBe(false);
  });

  it('keeps the last of a repeated key, as JSON.parse does', () => {
    const body = buf('{"model":"a","tools":[1],"model":"b","tools":{}}');
    const o = outline(body, ['tools'])!;
    expect(stringField(body, o, 'model')).toBe('b');
    expect(o.items.has('tools')).toBe(false);
  });

  it('reads non-ASCII and escaped strings and keys', () => {
    const body = buf('{"mod\\u0065l":"josé ✓","\\"k":1}');
    const o = outline(body)!;
    expect(stringField(body, o, 'model')).toBe('josé ✓');
    expect(o.fields.has('"k')).toBe(true);
  });

  it.each([
    '',
    '[]',
    '"s"',
    '{',
    '{"a":1',
    '{"a":1,}',
    '{"a" 1}',
    '{"a":[1,]}',
    '{"a":[1 2]}',
    '{"a":{"b"}}',
    '{"a":{"b":1,}}',
    '{"a":tru}',
    '{"a":01}',
    '{"a":"unterminated}',
    '{"a":1} x',
    '{"a":[}',
    '{"a":{]}',
    '{a:1}',
  ])('refuses %j', (text) => {
    expect(outline(buf(text), ['a'])).toBeUndefined();
  });

  it('agrees with JSON.parse on every object it is given, compact or indented', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 4 })),
        fc.constantFrom(undefined, 2),
        (value, indent) => {
          const body = buf(JSON.stringify(value, null, indent));
          const keys = Object.keys(value);
          const o = outline(body, keys);
          expect(o).toBeDefined();
          const parsed = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
          for (const key of keys) {
            expect(parseField(body, o!, key)).toEqual(parsed[key]);
            const items = o!.items.get(key);
            if (Array.isArray(parsed[key]))
              expect(items?.map((r) => parseRange(body, r))).toEqual(parsed[key]);
            else expect(items).toBeUndefined();
          }
        },
      ),
    );
  });

  it('never accepts a cut or a mangled object that JSON.parse refuses, unless only a string went bad', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 4 })),
        fc.nat(),
        fc.nat(),
        (value, cut, drop) => {
          const text = JSON.stringify(value);
          for (const bad of [
            text.slice(0, cut % (text.length + 1)),
            text.slice(0, drop % text.length) + text.slice((drop % text.length) + 1),
          ]) {
            let refused = false;
            try {
              JSON.parse(bad);
            } catch {
              refused = true;
            }
            const o = outline(buf(bad));
            if (!refused) {
              // A mangled text that is still JSON: an object is outlined, anything else is not.
              const isObject =
                typeof JSON.parse(bad) === 'object' &&
                JSON.parse(bad) !== null &&
                !Array.isArray(JSON.parse(bad));
              expect(o !== undefined).toBe(isObject);
            } else if (o !== undefined) {
              // Accepted although invalid: only possible when a string's inside went bad (an escape was cut).
              expect(bad).toMatch(/\\/);
            }
          }
        },
      ),
    );
  });

  it('follows nesting deeper than its first stack, and still finds a closer that does not match', () => {
    const deep = (n: number, inner: string): string => `${'[{"k":'.repeat(n)}${inner}${'}]'.repeat(n)}`;
    const text = `{"a":${deep(100, '1')},"b":2}`;
    const o = outline(buf(text));
    expect(o?.fields.get('b')).toEqual({ start: text.length - 2, end: text.length - 1 });
    expect(outline(buf(`{"a":${deep(100, '1').replace(/\}\]$/, ']]')}}`))).toBeUndefined();
  });

  it('takes a scalar exactly when JSON.parse does (numbers, literals, near misses)', () => {
    const piece = fc.constantFrom(
      '-',
      '+',
      '0',
      '1',
      '9',
      '.',
      'e',
      'E',
      'true',
      'false',
      'null',
      'nul',
      'x',
      '00',
    );
    fc.assert(
      fc.property(
        fc.array(piece, { minLength: 1, maxLength: 7 }),
        fc.constantFrom('', ' ', '\n'),
        (parts, pad) => {
          const token = parts.join('');
          let valid = true;
          try {
            JSON.parse(token);
          } catch {
            valid = false;
          }
          for (const text of [`{"a":${token}${pad}}`, `{"a":[${token},1]}`, `{"b":{"c":${token}}}`])
            expect(outline(buf(text)) !== undefined).toBe(valid);
        },
      ),
      { numRuns: 3000 },
    );
  });
});

describe('withoutField', () => {
  const cut = (text: string, key: string): string | undefined => {
    const body = Buffer.from(text);
    return withoutField(body, outline(body)!, key)?.toString();
  };

  it('cuts one member out wherever it stands, every other byte as it came', () => {
    expect(cut('{"a":1,"cm":{"x":[1]},"b":"c"}', 'cm')).toBe('{"a":1,"b":"c"}');
    expect(cut('{"cm": {"x": 1} ,\n "b": 2}', 'cm')).toBe('{\n "b": 2}');
    expect(cut('{"a": "cm", "cm" : 3}', 'cm')).toBe('{"a": "cm"}');
    expect(cut('{"cm":3}', 'cm')).toBe('{}');
    expect(cut('{"a":1}', 'cm')).toBeUndefined();
  });

  it('leaves JSON that parses to the object without the member (property)', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.jsonValue(), fc.nat(), (rest, value, at) => {
        const entries = Object.entries(rest).filter(([k]) => k !== 'cm');
        entries.splice(at % (entries.length + 1), 0, ['cm', value]);
        const text = JSON.stringify(Object.fromEntries(entries), null, at % 3);
        const out = cut(text, 'cm');
        // Against the object as JSON carries it: fc.jsonValue() may hold -0, which JSON writes as 0.
        const kept = JSON.stringify(Object.fromEntries(entries.filter(([k]) => k !== 'cm')));
        expect(JSON.parse(out!)).toEqual(JSON.parse(kept));
      }),
    );
  });
});
