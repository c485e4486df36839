import { homedir } from 'node:os';

import { resolveGuardianPaths } from '@guardian/archive';
import { envSchema, type GuardianEnv } from '@guardian/config';
import { CodedError } from '@guardian/errors';

import {
  sectionsOf,
  type AccessSection,
  type ArchiveSection,
  type CompactionSection,
  type MemoSection,
  type ProxySection,
  type ShutdownSection,
  type SummariserSection,
} from './config-sections';

/** Raised at boot when a variable is invalid; the message names the variable and what was expected. */
export class ConfigError extends CodedError<'CONFIG_INVALID'> {
  override readonly name = 'ConfigError';

  constructor(message: string) {
    super('CONFIG_INVALID', message);
  }
}

export interface UpstreamTarget {
  /** The configured base, `/v1` included, without a trailing slash. */
  base: URL;
  /** Path prefix of the base (`/v1`), used to map `/v1/<rest>` onto `<base>/<rest>`. */
  basePath: string;
  origin: string;
  /** The base as logs and `/guardian/stats` show it: without the `user:pass@` a URL may carry (issue 12 defect 7). */
  shown: string;
}

/** A URL without its credentials, as the Redis target is shown (libs/memo describeTarget). */
export function withoutCredentials(url: URL): string {
  if (url.username === '' && url.password === '') return url.href.replace(/\/+$/, '');
  const bare = new URL(url.href);
  bare.username = '';
  bare.password = '';
  return bare.href.replace(/\/+$/, '');
}

/** Variables whose value is a secret, or may carry one in its userinfo; a boot error never echoes them whole. */
const SECRET_VALUED = /(_TOKEN|_PASSWORD|_KEY)$/;
const URL_VALUED = /_URL$/;

function shownValue(name: string, value: string | undefined): string {
  if (value === undefined) return '""';
  if (SECRET_VALUED.test(name)) return '"(hidden)"';
  if (URL_VALUED.test(name)) return JSON.stringify(value.replace(/\/\/[^/@\s]*@/, '//***@'));
  return JSON.stringify(value);
}

/**
 * The sidecar's configuration, read from the environment once at boot (HOUSE rule 2).
 * A class so that Nest can inject it by type.
 */
export class GuardianConfig {
  /** The parsed environment. Services read their section below instead (ARCHITECTURE.md#configuration). */
  readonly env: GuardianEnv;
  readonly compaction: CompactionSection;
  readonly summariser: SummariserSection;
  readonly memo: MemoSection;
  readonly archive: ArchiveSection;
  readonly proxy: ProxySection;
  readonly shutdown: ShutdownSection;
  readonly access: AccessSection;
  readonly upstream: UpstreamTarget;
  readonly paths: ReturnType<typeof resolveGuardianPaths>;
  readonly allowedHosts: string[];
  readonly version: string;
  /**
   * GUARDIAN_TEST_CRASH_POINT: the archive writer's test-only crash hook (`after-rename@3`), handed to SealedArchive
   * as an option so the library reads no environment. Not configuration: the README table leaves it out.
   */
  readonly testCrashPoint: string | undefined;
  /** Messages to log once at startup (legacy variables, clamped reserve). */
  readonly warnings: string[] = [];

  private constructor(
    env: GuardianEnv,
    version: string,
    home: string,
    raw: Record<string, string | undefined>,
  ) {
    this.env = env;
    ({
      compaction: this.compaction,
      summariser: this.summariser,
      memo: this.memo,
      archive: this.archive,
      proxy: this.proxy,
      shutdown: this.shutdown,
      access: this.access,
    } = sectionsOf(env));
    this.version = version;
    this.testCrashPoint = raw.GUARDIAN_TEST_CRASH_POINT || undefined;
    const base = new URL(env.GUARDIAN_UPSTREAM_URL.replace(/\/+$/, ''));
    this.upstream = {
      base,
      basePath: base.pathname.replace(/\/+$/, ''),
      origin: base.origin,
      shown: withoutCredentials(base),
    };
    this.paths = resolveGuardianPaths(raw, home);
    this.warnings.push(...this.paths.warnings);
    this.allowedHosts = (env.GUARDIAN_ALLOWED_HOSTS ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean);
    if (env.GUARDIAN_SHUTDOWN_DRAIN_SECONDS >= env.GUARDIAN_SHUTDOWN_GRACE_SECONDS) {
      this.warnings.push(
        `GUARDIAN_SHUTDOWN_DRAIN_SECONDS (${env.GUARDIAN_SHUTDOWN_DRAIN_SECONDS}) is not below GUARDIAN_SHUTDOWN_GRACE_SECONDS (${env.GUARDIAN_SHUTDOWN_GRACE_SECONDS}); the drain ends with the grace, and answers still open then end at once`,
      );
    }
    if (env.GUARDIAN_NUM_CTX !== undefined && env.GUARDIAN_RESERVE_OUTPUT >= env.GUARDIAN_NUM_CTX) {
      this.warnings.push(
        `GUARDIAN_RESERVE_OUTPUT (${env.GUARDIAN_RESERVE_OUTPUT}) is not below GUARDIAN_NUM_CTX (${env.GUARDIAN_NUM_CTX}); half the window is reserved instead`,
      );
    }
  }

  static fromEnv(
    raw: Record<string, string | undefined>,
    opts: { version: string; home?: string },
  ): GuardianConfig {
    const picked: Record<string, string> = {};
    for (const [k, v] of Object.entries(raw)) {
      if ((k.startsWith('GUARDIAN_') || k.startsWith('OTEL_')) && v !== undefined) picked[k] = v;
    }
    const parsed = envSchema.safeParse(picked);
    if (!parsed.success) {
      const lines = parsed.error.issues.map((i) => {
        const name = i.path.join('.') || '(environment)';
        return `${name}=${shownValue(name, picked[name])}: ${i.message}`;
      });
      throw new ConfigError(`invalid configuration: ${lines.join('; ')}`);
    }
    if (parsed.data.GUARDIAN_TOKEN_REQUIRED && parsed.data.GUARDIAN_TOKENS_FILE === undefined) {
      // Only developer tokens name owners: requiring a token with none to hand out would lock every client out.
      throw new ConfigError(
        'invalid configuration: GUARDIAN_TOKEN_REQUIRED=1 needs GUARDIAN_TOKENS_FILE (the developer tokens)',
      );
    }
    return new GuardianConfig(parsed.data, opts.version, opts.home ?? homedir(), raw);
  }

  /** True when the bind address is loopback only: the archive is then open without tokens (ARCHITECTURE.md#access). */
  get loopbackBind(): boolean {
    const h = this.env.GUARDIAN_HOST;
    return h === 'localhost' || h === '::1' || h.startsWith('127.');
  }

  /** The dashboard URL for the port actually bound (GUARDIAN_PORT may be 0). */
  dashboardUrlFor(port: number): string {
    const host = this.env.GUARDIAN_HOST.includes(':')
      ? `[${this.env.GUARDIAN_HOST}]`
      : this.env.GUARDIAN_HOST;
    const shown = host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host;
    return `http://${shown}:${port}/guardian/health`;
  }
}
