import { resolveSession, sessionHash } from '../compaction/request/session';
import {
  readClientSession,
  readSessionHeader,
  readSubAgent,
  sessionRequiredMessage,
} from './session-headers';

/** A header line as Node hands it over: one character per byte on the wire. */
const wire = (text: string): string => Buffer.from(text, 'utf8').toString('latin1');

describe('readSessionHeader', () => {
  it('is absent when no line was sent', () => {
    expect(readSessionHeader(undefined)).toEqual({ kind: 'absent' });
    expect(readSessionHeader([])).toEqual({ kind: 'absent' });
  });

  it('decodes UTF-8 bytes, and keeps other bytes as they came', () => {
    expect(readSessionHeader([wire('josé')])).toEqual({ kind: 'value', value: 'josé' });
    expect(readSessionHeader([wire('開発者')])).toEqual({ kind: 'value', value: '開発者' });
    // Node's fetch sends é as the one byte 0xE9, not UTF-8: the same session as the UTF-8 spelling.
    expect(readSessionHeader(['jos\u00e9'])).toEqual({ kind: 'value', value: 'josé' });
  });

  it('counts the limit in bytes on the wire', () => {
    expect(readSessionHeader([wire('é'.repeat(128))])).toEqual({ kind: 'value', value: 'é'.repeat(128) });
    expect(readSessionHeader([wire('é'.repeat(129))])).toMatchObject({ kind: 'ignored', reason: 'too_long' });
    expect(readSessionHeader(['a'.repeat(256)])).toMatchObject({ kind: 'value' });
  });

  it('ignores an empty or blank value', () => {
    for (const blank of ['', '   ', '\t']) {
      expect(readSessionHeader([blank])).toMatchObject({
        kind: 'ignored',
        reason: 'empty',
        warning: 'X-Guardian-Session ignored: empty; the derived session key is used',
      });
    }
  });

  it('ignores two different values, takes one value sent twice, and skips blank repeats', () => {
    expect(readSessionHeader(['dave', 'erin'])).toMatchObject({
      kind: 'ignored',
      reason: 'repeated',
      warning:
        'X-Guardian-Session ignored: sent 2 times with different values; the derived session key is used',
    });
    expect(readSessionHeader(['carol', ' carol'])).toEqual({ kind: 'value', value: 'carol' });
    expect(readSessionHeader([wire('josé'), 'jos\u00e9'])).toEqual({ kind: 'value', value: 'josé' });
    expect(readSessionHeader(['', 'carol'])).toEqual({ kind: 'value', value: 'carol' });
    // One line that holds a comma is one value.
    expect(readSessionHeader(['dave, erin'])).toEqual({ kind: 'value', value: 'dave, erin' });
  });
});

describe('resolveSession', () => {
  const messages = [{ role: 'user' as const, text: 'hello' }];

  it('uses a value, and otherwise the same derived key whether the header was absent or ignored', () => {
    const alice = resolveSession({ kind: 'value', value: 'alice' }, 'm', messages, '');
    expect(alice).toEqual({
      key: 'alice',
      hash: sessionHash('alice'),
      stateHash: sessionHash('alice'),
      fromHeader: true,
      source: 'x-guardian-session',
      name: 'alice',
    });
    // In team mode the name is the value as sent, without the owner the key carries (the console lists it).
    const owned = resolveSession({ kind: 'value', value: 'laptop' }, 'm', messages, '', {
      owner: 'bob',
      ownerHash: 'h',
    });
    expect([owned.key, owned.name]).toEqual(['bob/laptop', 'laptop']);
    const none = resolveSession({ kind: 'absent' }, 'm', messages, '');
    const empty = resolveSession(readSessionHeader(['']), 'm', messages, '');
    expect(none.key).toMatch(/^derived:[0-9a-f]{16}$/);
    expect(empty.key).toBe(none.key);
    expect(empty.ignored?.reason).toBe('empty');
    expect(none.ignored).toBeUndefined();
    expect(none.name).toBeUndefined();
  });
});

describe('sessionRequiredMessage', () => {
  it('says why a sent header did not count', () => {
    expect(sessionRequiredMessage({ kind: 'absent' })).toBe(
      'X-Guardian-Session (1-256 bytes) is required by GUARDIAN_SESSION_HEADER_REQUIRED',
    );
    expect(sessionRequiredMessage(readSessionHeader(['dave', 'erin']))).toMatch(
      /; the one sent was ignored: sent 2 times with different values$/,
    );
  });
});

describe('readClientSession (issue 28 item 1)', () => {
  const from = (headers: Record<string, string[]>) => readClientSession((name) => headers[name]);

  it('tries Claude Code, then Codex session-id, then thread-id, and says which', () => {
    const all = { 'x-claude-code-session-id': ['cc'], 'session-id': ['s'], 'thread-id': ['t'] };
    expect(from(all)).toEqual({ kind: 'value', value: 'cc', source: 'x-claude-code-session-id' });
    expect(from({ 'session-id': ['s'], 'thread-id': ['t'] })).toMatchObject({
      value: 's',
      source: 'session-id',
    });
    expect(from({ 'thread-id': ['t'] })).toMatchObject({ value: 't', source: 'thread-id' });
    expect(from({})).toEqual({ kind: 'absent' });
  });

  it("tries OpenCode's x-session-id after Codex's, then Qwen Code's session_id", () => {
    expect(from({ 'thread-id': ['t'], 'x-session-id': ['ses_1'] })).toMatchObject({ source: 'thread-id' });
    expect(from({ 'x-session-id': ['ses_1'], session_id: ['q'] })).toEqual({
      kind: 'value',
      value: 'ses_1',
      source: 'x-session-id',
    });
    expect(from({ session_id: ['q'] })).toMatchObject({ value: 'q', source: 'session_id' });
    // OpenCode's `x-session-affinity` carries the same value; it is not a session id of its own.
    expect(from({ 'x-session-affinity': ['ses_1'] })).toEqual({ kind: 'absent' });
  });

  it('skips an id it would ignore (empty, two values) for the next one', () => {
    expect(
      from({ 'x-claude-code-session-id': [' '], 'session-id': ['a', 'b'], 'thread-id': ['t'] }),
    ).toMatchObject({
      value: 't',
      source: 'thread-id',
    });
  });

  it('carries the source into the resolved session; the derived key says derived', () => {
    const msgs = [{ role: 'user' as const, text: 'hi' }];
    expect(resolveSession(from({ 'session-id': ['s'] }), 'm', msgs, '').source).toBe('session-id');
    expect(resolveSession({ kind: 'value', value: 'alice' }, 'm', msgs, '').source).toBe(
      'x-guardian-session',
    );
    expect(resolveSession({ kind: 'absent' }, 'm', msgs, '').source).toBe('derived');
    expect(
      resolveSession(from({ 'session-id': ['s'] }), 'm', msgs, '', { owner: 'ann', ownerHash: 'h' }).key,
    ).toBe('ann/s');
  });
});

describe('readSubAgent and the sub-agent state key (issue 28 item 1)', () => {
  const from = (headers: Record<string, string[]>) => readSubAgent((name) => headers[name]);
  const msgs = [{ role: 'user' as const, text: 'hi' }];

  it('reads the agent id, and its parent for a nested one; a parent alone names no sub-agent', () => {
    expect(from({ 'x-claude-code-agent-id': ['a1'] })).toEqual({ id: 'a1' });
    expect(from({ 'x-claude-code-agent-id': ['b2'], 'x-claude-code-parent-agent-id': ['a1'] })).toEqual({
      id: 'b2',
      parent: 'a1',
    });
    expect(from({ 'x-claude-code-parent-agent-id': ['a1'] })).toBeUndefined();
    expect(from({ 'x-claude-code-agent-id': [' '] })).toBeUndefined();
    expect(from({ 'x-claude-code-agent-id': ['a', 'b'] })).toBeUndefined();
  });

  it("keeps the parent's session and gives each agent a state key of its own", () => {
    const main = resolveSession({ kind: 'value', value: 's' }, 'm', msgs, '');
    const a1 = resolveSession({ kind: 'value', value: 's', agent: { id: 'a1' } }, 'm', msgs, '');
    const b2 = resolveSession(
      { kind: 'value', value: 's', agent: { id: 'b2', parent: 'a1' } },
      'm',
      msgs,
      '',
    );
    expect(main.stateHash).toBe(main.hash);
    expect([a1.hash, b2.hash]).toEqual([main.hash, main.hash]);
    expect(a1.key).toBe(main.key);
    expect(new Set([main.stateHash, a1.stateHash, b2.stateHash]).size).toBe(3);
    expect(b2.agent).toEqual({ id: 'b2', parent: 'a1' });
    // Team mode: the owner scopes the agent's state as it scopes the session.
    const ann = resolveSession({ kind: 'value', value: 's', agent: { id: 'a1' } }, 'm', msgs, '', {
      owner: 'ann',
      ownerHash: 'h',
    });
    expect(ann.key).toBe('ann/s');
    expect(ann.stateHash).not.toBe(a1.stateHash);
  });
});
