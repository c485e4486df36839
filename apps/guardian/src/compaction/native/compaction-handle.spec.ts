import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import fc from 'fast-check';

import { GuardianError } from '../../http/http-error';
import { assertHandleOwner, HandleSealer, type HandleClaims, type HandleLog } from './compaction-handle';
import { loadHandleKey } from './handle-key';

const hex64 = fc.stringMatching(/^[0-9a-f]{64}$/);
const logArb: fc.Arbitrary<HandleLog> = fc
  .record({
    log: fc.stringMatching(/^[A-Za-z0-9_-]{1,80}$/),
    index: fc.nat(100_000),
    more: fc.nat(100_000),
    root: fc.base64String({ minLength: 44, maxLength: 44 }),
    sha256: hex64,
  })
  .map(({ more, ...l }) => ({ ...l, size: l.index + 1 + more }));
const claimsArb: fc.Arbitrary<HandleClaims> = fc
  .record({
    session: hex64,
    from: fc.nat(500),
    span: fc.nat(500),
    memoKey: hex64,
    chainHead: fc.option(fc.stringMatching(/^[0-9a-z-]{8,40}\/[0-9]{4}\.json$/), { nil: null }),
    content: fc.option(hex64, { nil: undefined }),
    owner: fc.option(hex64, { nil: null }),
    log: fc.option(logArb, { nil: null }),
    threshold: fc.boolean(),
  })
  .map(({ span, content, threshold, ...c }) => ({
    ...c,
    cut: c.from + span,
    ...(content === undefined ? {} : { content }),
    ...(threshold ? { kind: 'threshold' as const } : {}),
  }));

/** A cg1 handle as guardian sealed them before cg2 (no owner, no checkpoint). */
function sealV1(key: Buffer, c: { s: string; f: number; c: number; m: string; h: string | null }): string {
  const payload = Buffer.from(JSON.stringify(c)).toString('base64url');
  return `cg1.${payload}.${createHmac('sha256', key).update(`cg1.${payload}`).digest('base64url')}`;
}

function refusedCode(open: () => unknown): string | undefined {
  try {
    open();
    return undefined;
  } catch (err) {
    return err instanceof GuardianError && err.status < 500 ? err.code : 'other';
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
        expect(handle.startsWith('cg2.')).toBe(true);
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

  it('still opens a cg1 handle, naming no owner and no checkpoint; a cg1 payload under cg2 is refused', () => {
    const key = loadHandleKey(join(dir, 'k1'), { mustExist: false });
    const sealer = new HandleSealer(key);
    const old = { s: 'a'.repeat(64), f: 0, c: 6, m: 'b'.repeat(64), h: 'run-1/0001.json' };
    const handle = sealV1(key, old);
    expect(sealer.open(handle)).toEqual({
      session: old.s,
      from: 0,
      cut: 6,
      memoKey: old.m,
      chainHead: old.h,
    });
    const [, payload] = handle.split('.');
    const relabelled = `cg2.${payload}.${createHmac('sha256', key).update(`cg2.${payload}`).digest('base64url')}`;
    // The mac is right for cg2 but the payload names no owner: refused, never read as a cg2 handle of no one.
    expect(refusedCode(() => sealer.open(relabelled))).toBe('GUARDIAN_COMPACTION_HANDLE_INVALID');
    expect(refusedCode(() => sealer.open(`cg2${handle.slice(3)}`))).toBe(
      'GUARDIAN_COMPACTION_HANDLE_INVALID',
    );
  });

  it("is expanded only for its owner's requests; a cg1 handle only outside team mode", () => {
    const base = { session: 'a'.repeat(64), from: 0, cut: 2, memoKey: 'b'.repeat(64), chainHead: null };
    const ada = 'c'.repeat(64);
    const bob = 'd'.repeat(64);
    const code = (claims: HandleClaims, owner: string | undefined) =>
      refusedCode(() => assertHandleOwner(claims, owner));
    expect(code({ ...base, owner: ada }, ada)).toBeUndefined();
    expect(code({ ...base, owner: ada }, bob)).toBe('GUARDIAN_COMPACTION_HANDLE_FOREIGN');
    expect(code({ ...base, owner: ada }, undefined)).toBe('GUARDIAN_COMPACTION_HANDLE_FOREIGN');
    expect(code({ ...base, owner: null }, undefined)).toBeUndefined();
    expect(code({ ...base, owner: null }, ada)).toBe('GUARDIAN_COMPACTION_HANDLE_FOREIGN');
    expect(code(base, undefined)).toBeUndefined();
    expect(code(base, ada)).toBe('GUARDIAN_COMPACTION_HANDLE_FOREIGN');
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
