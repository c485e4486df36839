import { GuardianConfig } from '../config/guardian-config';
import { SessionTable } from './session-table';

// The per-session state of one process: bounded by GUARDIAN_MAX_SESSIONS, least recently used session first out,
// and at most 64 spilled pastes a session (issue 3 §8: a paste that comes back every turn is archived once).

const table = (maxSessions: number) =>
  new SessionTable(
    GuardianConfig.fromEnv(
      { GUARDIAN_MAX_SESSIONS: String(maxSessions) },
      { version: 't', home: '/nonexistent' },
    ),
  );
const ref = (n: number) => ({ run: 'r', span: n, ref: `r/${n}` });

describe('SessionTable', () => {
  it('forgets the least recently touched session past GUARDIAN_MAX_SESSIONS', () => {
    const t = table(2);
    t.touch('a', '2026-01-01T00:00:00Z');
    t.touch('b', '2026-01-02T00:00:00Z');
    t.touch('a');
    t.touch('c', '2026-01-03T00:00:00Z');
    expect(t.size).toBe(2);
    expect(t.touch('a')).toBe('2026-01-01T00:00:00Z');
    expect(t.touch('b')).toBeNull();
  });

  it('does not count a spill lookup as a use of the session', () => {
    const t = table(2);
    t.rememberSpill('a', 'd1', ref(1));
    t.touch('b');
    expect(t.spilled('a', 'd1')).toEqual(ref(1));
    t.touch('c');
    expect(t.spilled('a', 'd1')).toBeUndefined();
  });

  it('keeps a paste asked for every turn when a 65th spill comes, and forgets the one never asked for again', () => {
    const t = table(4);
    t.rememberSpill('s', 'every-turn', ref(0));
    t.rememberSpill('s', 'once', ref(1));
    for (let i = 2; i < 65; i++) {
      expect(t.spilled('s', 'every-turn')).toEqual(ref(0));
      t.rememberSpill('s', `paste-${i}`, ref(i));
    }
    expect(t.spilled('s', 'every-turn')).toEqual(ref(0));
    expect(t.spilled('s', 'once')).toBeUndefined();
    expect(t.spilled('s', 'paste-2')).toEqual(ref(2));
  });
});
