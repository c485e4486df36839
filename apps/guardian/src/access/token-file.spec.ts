import { parseTokensFile, tokenDigest, TokensFileError } from './token-file';

const A = 'tok-alice-0123456789abcdef';
const B = 'tok-bob-0123456789abcdef00';
const C = 'tok-alice-laptop-2-0123456';

describe('parseTokensFile', () => {
  it('reads `token owner` lines, skipping blank lines and comments; one owner may hold several tokens', () => {
    const set = parseTokensFile(`# issued 2026-12-01\n\n${A} alice\n  ${B}\tbob  \r\n${C} alice\n`);
    expect([...set.owners.entries()]).toEqual([
      [tokenDigest(A), 'alice'],
      [tokenDigest(B), 'bob'],
      [tokenDigest(C), 'alice'],
    ]);
    expect(set.ownerCount).toBe(2);
  });

  it('reads the same map written as JSON, an object or a list', () => {
    const fromMap = parseTokensFile(JSON.stringify({ [A]: 'alice', [B]: 'bob' }));
    const fromList = parseTokensFile(
      JSON.stringify([
        { token: A, owner: 'alice' },
        { token: B, owner: 'bob' },
      ]),
    );
    expect([...fromMap.owners]).toEqual([...fromList.owners]);
    expect(fromMap.owners.get(tokenDigest(B))).toBe('bob');
  });

  it.each([
    ['an empty file', '# nothing yet\n', 'names no token'],
    ['three fields', `${A} alice extra`, 'line 1: expected "<token> <owner>", found 3 field(s)'],
    ['a short token', `short alice`, 'line 1: a token is 16-512 visible ASCII characters'],
    ['a slash in an owner', `${A} team/alice`, 'line 1: owner "team/alice" must match'],
    ['the reserved owner', `${A} admin`, 'line 1: "admin" is reserved for GUARDIAN_ADMIN_TOKEN'],
    ['a token listed twice', `${A} alice\n${A} bob`, 'line 2: this token is listed twice'],
    ['broken JSON', `{"${A}": "alice",`, 'not valid JSON'],
    ['JSON of another shape', JSON.stringify({ tokens: [A] }), 'JSON tokens must be'],
    ['a JSON entry with a bad owner', JSON.stringify([{ token: A, owner: '' }]), 'entry 1: owner ""'],
  ])('refuses %s with a message that names where, never the token', (_label, text, message) => {
    let caught: unknown;
    try {
      parseTokensFile(text);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(TokensFileError);
    expect((caught as TokensFileError).code).toBe('ACCESS_TOKENS_INVALID');
    expect((caught as Error).message).toContain(message);
    expect((caught as Error).message).not.toContain(A);
  });
});
