import { ConfigError, GuardianConfig } from './guardian-config';

const load = (env: Record<string, string>) =>
  GuardianConfig.fromEnv(env, { version: 't', home: '/home/dev' });

describe('GuardianConfig', () => {
  it('takes the defaults ARCHITECTURE.md#configuration lists', () => {
    const c = load({});
    expect(c.env).toMatchObject({
      GUARDIAN_UPSTREAM_URL: 'http://127.0.0.1:8000/v1',
      GUARDIAN_HOST: '127.0.0.1',
      GUARDIAN_PORT: 8786,
      GUARDIAN_COMPACT_THRESHOLD: 0.85,
      GUARDIAN_RESERVE_OUTPUT: 8192,
      GUARDIAN_KEEP_RECENT_FRACTION: 0.2,
      GUARDIAN_CHARS_PER_TOKEN: 3.5,
      GUARDIAN_TOKENIZE_TIMEOUT_MS: 5000,
      GUARDIAN_UPSTREAM_TIMEOUT: 600,
      GUARDIAN_UPSTREAM_CONNECT_TIMEOUT: 10,
      GUARDIAN_MAX_BODY_BYTES: 67108864,
      GUARDIAN_KEEP_SPANS: 500,
      GUARDIAN_MIN_SUMMARY_CHARS: 40,
      GUARDIAN_MIN_TRANSCRIPT_CHARS: 80,
      GUARDIAN_TOOL_ARG_CHARS: 300,
      GUARDIAN_SUMMARY_MEMO: true,
      GUARDIAN_PIN_MAX_CHARS: 1600,
      GUARDIAN_LEDGER_MAX_CHARS: 1200,
      GUARDIAN_RECALL_MAX_CHARS: 1200,
      GUARDIAN_ANCHOR_MAX_CHARS: 800,
      GUARDIAN_STATED_MAX_CHARS: 1200,
      GUARDIAN_HANDOFF: true,
      GUARDIAN_DRY_RUN: false,
      GUARDIAN_CAPTURE: 'off',
      GUARDIAN_MAX_SESSIONS: 1024,
      GUARDIAN_REDIS_PREFIX: 'guardian:',
      GUARDIAN_REDIS_TIMEOUT_MS: 250,
      GUARDIAN_MEMO_TTL: 604800,
      GUARDIAN_MEMO_LOCK_WAIT_MS: 30000,
      GUARDIAN_LOG_LEVEL: 'info',
    });
    expect(c.env.GUARDIAN_NUM_CTX).toBeUndefined();
    expect(c.paths.spanDir).toBe('/home/dev/.local/share/context-guardian/spans');
    expect(c.upstream).toMatchObject({ basePath: '/v1', origin: 'http://127.0.0.1:8000' });
    expect(c.loopbackBind).toBe(true);
  });

  it.each([
    ['GUARDIAN_PORT', 'eighty'],
    ['GUARDIAN_COMPACT_THRESHOLD', '1.5'],
    ['GUARDIAN_UPSTREAM_URL', 'ftp://example'],
    ['GUARDIAN_NUM_CTX', '12.5'],
    ['GUARDIAN_DRY_RUN', 'maybe'],
    ['GUARDIAN_REDIS_URL', 'http://redis:6379'],
    ['GUARDIAN_CAPTURE', 'everything'],
  ])('refuses %s=%s with a message naming the variable', (name, value) => {
    expect(() => load({ [name]: value })).toThrow(ConfigError);
    expect(() => load({ [name]: value })).toThrow(new RegExp(`${name}=`));
  });

  it('refuses GUARDIAN_TOKEN_REQUIRED=1 without GUARDIAN_TOKENS_FILE: no developer could ever get in', () => {
    expect(() => load({ GUARDIAN_TOKEN_REQUIRED: '1' })).toThrow(/needs GUARDIAN_TOKENS_FILE/);
    expect(
      load({ GUARDIAN_TOKEN_REQUIRED: '1', GUARDIAN_TOKENS_FILE: '/run/secrets/tokens' }).env,
    ).toMatchObject({
      GUARDIAN_TOKEN_REQUIRED: true,
    });
  });

  it('warns when the reserve is not below the window (half the window is reserved instead)', () => {
    const c = load({ GUARDIAN_NUM_CTX: '4096', GUARDIAN_RESERVE_OUTPUT: '8192' });
    expect(c.warnings.join('\n')).toContain('GUARDIAN_RESERVE_OUTPUT');
  });

  it('maps an upstream mounted under a prefix and ignores variables that are not its own', () => {
    const c = load({
      GUARDIAN_UPSTREAM_URL: 'https://gw.internal/team-a/openai/v1/',
      PATH: '/usr/bin',
      HOME: '/x',
    });
    expect(c.upstream).toEqual({
      base: new URL('https://gw.internal/team-a/openai/v1'),
      basePath: '/team-a/openai/v1',
      origin: 'https://gw.internal',
      shown: 'https://gw.internal/team-a/openai/v1',
    });
  });

  it('shows the upstream without the user:pass it may carry, and never echoes a secret in a boot error', () => {
    const c = load({ GUARDIAN_UPSTREAM_URL: 'http://alice:s3cret@gw.internal:4000/v1' });
    expect(c.upstream.shown).toBe('http://gw.internal:4000/v1');
    expect(c.upstream.origin).not.toContain('s3cret');
    const refusals: [string, string][] = [
      ['GUARDIAN_UPSTREAM_URL', 'ftp://alice:s3cret@gw.internal/v1'],
      ['GUARDIAN_REDIS_URL', 'http://:s3cret@redis:6379'],
    ];
    for (const [name, value] of refusals) {
      expect(() => load({ [name]: value })).toThrow(new RegExp(`${name}="\\w+://\\*\\*\\*@`));
      expect(() => load({ [name]: value })).not.toThrow(/s3cret/);
    }
  });

  it('names the dashboard by the port actually bound, and a wildcard bind by loopback', () => {
    expect(load({ GUARDIAN_HOST: '0.0.0.0' }).dashboardUrlFor(43210)).toBe(
      'http://127.0.0.1:43210/guardian/health',
    );
    expect(load({ GUARDIAN_HOST: '0.0.0.0' }).loopbackBind).toBe(false);
  });
});

describe('GuardianConfig sections', () => {
  it('hands each service its values, read once from the environment', () => {
    const c = load({
      GUARDIAN_NUM_CTX: '16384',
      GUARDIAN_KEEP_RECENT_MESSAGES: '6',
      GUARDIAN_SUMMARY_TIMEOUT_MS: '1234',
      GUARDIAN_SUMMARY_MEMO: 'off',
      GUARDIAN_COST_PER_1M_INPUT_USD: '2.5',
      GUARDIAN_REDIS_URL: 'redis://memo:6379',
      GUARDIAN_CAPTURE: 'journal',
      GUARDIAN_SESSION_HEADER_REQUIRED: '1',
      GUARDIAN_ADMIN_TOKEN: 'adm',
    });
    expect(c.compaction).toMatchObject({
      window: 16384,
      threshold: 0.85,
      keepRecent: { fraction: 0.2, messages: 6 },
    });
    expect(c.summariser).toMatchObject({
      timeoutMs: 1234,
      memo: false,
      precompact: { threshold: 0.8, concurrency: 2 },
    });
    expect(c.memo).toMatchObject({
      redisUrl: 'redis://memo:6379',
      redisPrefix: 'guardian:',
      lockWaitMs: 30000,
    });
    expect(c.archive).toEqual({
      keepSpans: 500,
      capture: 'journal',
      log: { keyFile: undefined, originPrefix: undefined },
      costPer1MInputUsd: 2.5,
      costPer1MOutputUsd: 0,
    });
    expect(c.proxy).toMatchObject({ port: 8786, maxBodyBytes: 67108864, sessionHeaderRequired: true });
    expect(c.access).toEqual({ adminToken: 'adm', tokensFile: undefined, tokenRequired: false });
  });
});
