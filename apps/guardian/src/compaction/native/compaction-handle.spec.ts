import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import fc from 'fast-check';

import { GuardianError } from '../../http/http-error';
import { HandleSealer, type HandleClaims } from './compaction-handle';
import { loadHandleKey } from './handle-key';

const claimsArb: fc.Arbitrary<HandleClaims> = fc
  .record({
    session: fc.stringMatching(/^[0-9a-f]{64}$/),
    from: fc.nat(500),
    span: fc.nat(500),
    memoKey: fc.stringMatching(/^[0-9a-f]{64}$/),
    chainHead: fc.option(fc.stringMatching(/^[0-9a-z-]{8,40}\/[0-9]{4}\.json$/), { nil: null }),
    content: fc.option(fc.stringMatching(/^[0-9a-f]{64}$/), { nil: undefined }),
  })
  .map(({ span, content, ...c }) => ({
    ...c,
    cut: c.from + span,
    ...(content === undefined ? {} : { content }),
  }));

function refusedCode(open: () => unknown): string | undefined {
  try {
    open();
    return undefined;
  } catch (err) {
    return err instanceof GuardianError && err.status === 400 ? err.code : 'other';
  }
}

describe('compaction handle', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cg-handle-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('round-trips every claim, and across a restart that reads the key file again', () => {
    const path = join(dir, 'native-compaction.key');
    const first = new HandleSealer(loadHandleKey(path, { mustExist: false }));
    expect(statSync(path).mode & 0o777).toBe(0o600);
    fc.assert(
      fc.property(claimsArb, (claims) => {
        const handle = first.seal(claims);
        expect(handle.startsWith('cg1.')).toBe(true);
        // A restarted process (or another replica on the volume) makes no new key and opens the same handle.
        const restarted = new HandleSealer(loadHandleKey(path, { mustExist: false }));
        expect(restarted.open(handle)).toEqual(claims);
      }),
      { numRuns: 200 },
    );
  });

  it('refuses a handle with any one character changed, dropped or added', () => {
    const sealer = new HandleSealer(loadHandleKey(join(dir, 'k'), { mustExist: false }));
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
    fc.assert(
      fc.property(
        claimsArb,
        fc.nat(),
        fc.nat(alphabet.length - 1),
        fc.constantFrom('change', 'drop', 'add'),
        (claims, at, ch, how) => {
          const handle = sealer.seal(claims);
          const i = at % handle.length;
          const c = alphabet[ch]!;
          let edited: string;
          if (how === 'drop') edited = handle.slice(0, i) + handle.slice(i + 1);
          else if (how === 'add') edited = handle.slice(0, i) + c + handle.slice(i);
          else
            edited =
              handle.slice(0, i) +
              (handle[i] === c ? alphabet[(ch + 1) % alphabet.length]! : c) +
              handle.slice(i + 1);
          expect(refusedCode(() => sealer.open(edited))).toBe('GUARDIAN_COMPACTION_HANDLE_INVALID');
        },
      ),
      { numRuns: 500 },
    );
  });

  it("refuses another deployment's handle and a truncated one", () => {
    const ours = new HandleSealer(loadHandleKey(join(dir, 'a'), { mustExist: false }));
    const theirs = new HandleSealer(loadHandleKey(join(dir, 'b'), { mustExist: false }));
    const claims: HandleClaims = {
      session: 'a'.repeat(64),
      from: 0,
      cut: 4,
      memoKey: 'b'.repeat(64),
      chainHead: null,
    };
    const handle = theirs.seal(claims);
    expect(refusedCode(() => ours.open(handle))).toBe('GUARDIAN_COMPACTION_HANDLE_INVALID');
    expect(refusedCode(() => ours.open(ours.seal(claims).slice(0, 20)))).toBe(
      'GUARDIAN_COMPACTION_HANDLE_INVALID',
    );
    expect(refusedCode(() => ours.open(''))).toBe('GUARDIAN_COMPACTION_HANDLE_INVALID');
  });

  it('reads a mounted Secret and refuses a missing or short one instead of making a key', () => {
    const secret = join(dir, 'secret');
    expect(() => loadHandleKey(secret, { mustExist: true })).toThrow(/cannot read/);
    writeFileSync(secret, 'short');
    expect(() => loadHandleKey(secret, { mustExist: true })).toThrow(/under 32/);
    writeFileSync(secret, 'x'.repeat(48));
    expect(loadHandleKey(secret, { mustExist: true }).length).toBe(48);
  });
});
