import { resolveGuardianPaths, assertRunId, assertSpanNumber, spanFileName } from './archive-paths';
import { canonicalJson } from './canonical-json';

describe('resolveGuardianPaths', () => {
  it('defaults under ~/.local/share/context-guardian', () => {
    expect(resolveGuardianPaths({}, '/home/dev')).toEqual({
      dataDir: '/home/dev/.local/share/context-guardian',
      spanDir: '/home/dev/.local/share/context-guardian/spans',
      logDir: '/home/dev/.local/share/context-guardian/log',
      receiptsDir: '/home/dev/.local/share/context-guardian/receipts',
      anchorDir: null,
      verifiedDir: '/home/dev/.local/state/context-guardian/verified',
      warnings: [],
    });
  });

  it('follows XDG_DATA_HOME, then GUARDIAN_DATA_DIR, then each folder variable', () => {
    expect(resolveGuardianPaths({ XDG_DATA_HOME: '/xdg' }, '/h').spanDir).toBe('/xdg/context-guardian/spans');
    const paths = resolveGuardianPaths(
      {
        XDG_DATA_HOME: '/xdg',
        GUARDIAN_DATA_DIR: '/data',
        GUARDIAN_LOG_DIR: '/logs',
        GUARDIAN_SEAL_ANCHOR_DIR: '/a',
      },
      '/h',
    );
    expect(paths).toMatchObject({
      spanDir: '/data/spans',
      logDir: '/logs',
      receiptsDir: '/data/receipts',
      anchorDir: '/a',
    });
  });

  it('turns receipts off with GUARDIAN_RECEIPTS=0', () => {
    expect(resolveGuardianPaths({ GUARDIAN_RECEIPTS: '0' }, '/h').receiptsDir).toBeNull();
  });

  it('keeps the last verified checkpoints in XDG_STATE_HOME, or GUARDIAN_VERIFIED_DIR', () => {
    expect(resolveGuardianPaths({ XDG_STATE_HOME: '/st' }, '/h').verifiedDir).toBe(
      '/st/context-guardian/verified',
    );
    expect(resolveGuardianPaths({ GUARDIAN_VERIFIED_DIR: '/audit' }, '/h').verifiedDir).toBe('/audit');
  });

  it("reads the seed's file variables as their folders, with a warning each", () => {
    const paths = resolveGuardianPaths(
      { GUARDIAN_LOG_PATH: '/old/logs/guardian.jsonl', GUARDIAN_SEAL_ANCHOR_PATH: '/safe/anchor.jsonl' },
      '/h',
    );
    expect(paths.logDir).toBe('/old/logs');
    expect(paths.anchorDir).toBe('/safe');
    expect(paths.warnings).toHaveLength(2);
  });
});

describe('ids', () => {
  it.each(['../etc', 'a/b', '', 'x'.repeat(81), 'run.1'])('refuses run id %p', (run) => {
    expect(() => assertRunId(run)).toThrow(expect.objectContaining({ code: 'ARCHIVE_BAD_ID' }));
  });
  it.each([-1, 1.5, Number.NaN])('refuses span number %p', (n) => {
    expect(() => assertSpanNumber(n)).toThrow(expect.objectContaining({ code: 'ARCHIVE_BAD_ID' }));
  });
  it('names spans with four digits, then more', () => {
    expect([spanFileName(1), spanFileName(9999), spanFileName(10000)]).toEqual([
      '0001.json',
      '9999.json',
      '10000.json',
    ]);
  });
});

describe('canonicalJson', () => {
  it('sorts keys, drops whitespace and escapes like JSON.stringify', () => {
    expect(canonicalJson({ b: [2, 1], a: 'é"\n\u0001', c: true })).toBe(
      '{"a":"é\\"\\n\\u0001","b":[2,1],"c":true}',
    );
  });
  it('refuses numbers that are not safe integers', () => {
    expect(() => canonicalJson({ a: 1.5 })).toThrow(TypeError);
  });
});
