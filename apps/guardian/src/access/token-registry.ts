import { timingSafeEqual } from 'node:crypto';
import { readFileSync, unwatchFile, watchFile, type Stats } from 'node:fs';
import { readFile } from 'node:fs/promises';

import { ownerHash } from '@guardian/archive';
import { codeOf } from '@guardian/errors';
import type { GuardianMetrics } from '@guardian/telemetry';
import type { Logger } from 'pino';

import { ADMIN_OWNER, TokensFileError, parseTokensFile, tokenDigest, type TokenSet } from './token-file';

/**
 * Who sent a request, as its X-Guardian-Token says (ARCHITECTURE.md#access). `anonymous`: no token, or no token configured
 * to check one against; `rejected`: a token that is not accepted (or two different ones).
 */
export type Caller =
  | { kind: 'anonymous' }
  | { kind: 'rejected' }
  | { kind: 'admin'; owner: typeof ADMIN_OWNER; ownerHash: string }
  | { kind: 'developer'; owner: string; ownerHash: string };

/** How often the tokens file is looked at for a change (a stat; Kubernetes takes up to a minute to update a Secret). */
export const TOKENS_POLL_MS = 1000;

export interface TokenRegistryOptions {
  /** GUARDIAN_TOKENS_FILE. */
  file?: string;
  /** GUARDIAN_ADMIN_TOKEN. */
  adminToken?: string;
  logger: Logger;
  metrics: GuardianMetrics;
  pollMs?: number;
}

const ADMIN_HASH = ownerHash(ADMIN_OWNER);

/**
 * The tokens guardian accepts: the admin token and the developer tokens of GUARDIAN_TOKENS_FILE, which is read at
 * boot (a bad file stops the boot) and again whenever it changes, without a restart. A reload that fails keeps the
 * last good set, and is counted and logged once per content; a token never appears in a log line or a metric.
 */
export class TokenRegistry {
  private set: TokenSet = { owners: new Map(), ownerCount: 0 };
  private readonly adminDigest: Buffer | undefined;
  /** Digest of the file content in use, and what the last refused reload was, so one bad edit is logged once. */
  private contentDigest = '';
  private lastRefusal = '';
  private reloading: Promise<void> = Promise.resolve();
  private firstLook: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly onChange = (curr: Stats, prev: Stats): void => {
    if (curr.mtimeMs === prev.mtimeMs && curr.size === prev.size && curr.ino === prev.ino) return;
    this.reloading = this.reloading.then(() => this.reload());
  };

  private constructor(private readonly opts: TokenRegistryOptions) {
    this.adminDigest =
      opts.adminToken === undefined ? undefined : Buffer.from(tokenDigest(opts.adminToken), 'hex');
  }

  /** Reads the tokens file once (throws TokensFileError when it cannot be used) and starts watching it. */
  static open(opts: TokenRegistryOptions): TokenRegistry {
    const registry = new TokenRegistry(opts);
    const file = opts.file;
    if (file !== undefined) {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        throw new TokensFileError(`GUARDIAN_TOKENS_FILE cannot be read (${errorCode(err)})`, { cause: err });
      }
      registry.use(registry.check(text), text);
      // A stat per interval follows the path through the symlink Kubernetes swaps when a Secret changes, which
      // fs.watch on the file itself would lose; `persistent: false` never holds the process open.
      const interval = opts.pollMs ?? TOKENS_POLL_MS;
      watchFile(file, { interval, persistent: false }, registry.onChange);
      // The watcher takes its first stat a little later: a change made before that is read by one look after it
      // (an unchanged content is a no-op).
      registry.firstLook = setTimeout(() => {
        registry.reloading = registry.reloading.then(() => registry.reload({ extraLook: true }));
      }, interval * 2);
      registry.firstLook.unref();
    }
    opts.metrics.tokensLoaded.set(registry.set.owners.size);
    return registry;
  }

  /** True when any token is configured: then a token that is sent must be one of them. */
  get configured(): boolean {
    return this.adminDigest !== undefined || this.opts.file !== undefined;
  }

  get adminConfigured(): boolean {
    return this.adminDigest !== undefined;
  }

  /** Resolves X-Guardian-Token (its header lines as sent). */
  identify(lines: readonly string[] | undefined): Caller {
    if (!this.configured || lines === undefined || lines.length === 0) return { kind: 'anonymous' };
    const sent = new Set(lines.map((l) => l.trim()).filter((l) => l !== ''));
    if (sent.size === 0) return { kind: 'anonymous' };
    // Two different tokens name no one for sure; guessing between them would be guessing an identity.
    if (sent.size > 1) return { kind: 'rejected' };
    const [token = ''] = sent;
    const digest = tokenDigest(token);
    if (this.adminDigest !== undefined && timingSafeEqual(Buffer.from(digest, 'hex'), this.adminDigest))
      return { kind: 'admin', owner: ADMIN_OWNER, ownerHash: ADMIN_HASH };
    // A map keyed by the digest: the lookup reveals nothing about how close a guess came to a real token.
    const owner = this.set.owners.get(digest);
    return owner === undefined
      ? { kind: 'rejected' }
      : { kind: 'developer', owner, ownerHash: ownerHash(owner) };
  }

  /** The owners the tokens file in use names, once each (the console shows names where the log keeps hashes). */
  ownerNames(): string[] {
    return [...new Set(this.set.owners.values())];
  }

  /** Waits for a reload in progress (tests, shutdown). */
  settled(): Promise<void> {
    return this.reloading;
  }

  /** Nest calls it when the app closes: the watcher stops. */
  onModuleDestroy(): void {
    this.close();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.firstLook);
    if (this.opts.file !== undefined) unwatchFile(this.opts.file, this.onChange);
  }

  private check(text: string): TokenSet {
    const set = parseTokensFile(text);
    if (this.adminDigest !== undefined && set.owners.has(this.adminDigest.toString('hex')))
      throw new TokensFileError(
        'a token in the file is GUARDIAN_ADMIN_TOKEN; give developers tokens of their own',
      );
    return set;
  }

  private use(set: TokenSet, text: string): void {
    this.set = set;
    this.contentDigest = tokenDigest(text);
    this.opts.metrics.tokensLoaded.set(set.owners.size);
  }

  /** `extraLook`: the one look after boot, which counts nothing the watcher already counted. */
  private async reload(opts: { extraLook?: boolean } = {}): Promise<void> {
    const { logger, metrics, file } = this.opts;
    if (file === undefined || this.closed) return;
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      metrics.tokensReloads.inc({ outcome: 'unreadable' });
      const code = errorCode(err);
      if (this.lastRefusal !== `unreadable:${code}`)
        logger.warn({ code }, 'GUARDIAN_TOKENS_FILE cannot be read; the tokens loaded before stay in use');
      this.lastRefusal = `unreadable:${code}`;
      return;
    }
    const digest = tokenDigest(text);
    if (digest === this.contentDigest || (opts.extraLook === true && digest === this.lastRefusal)) return;
    try {
      const set = this.check(text);
      this.use(set, text);
      this.lastRefusal = '';
      metrics.tokensReloads.inc({ outcome: 'loaded' });
      logger.info({ tokens: set.owners.size, owners: set.ownerCount }, 'GUARDIAN_TOKENS_FILE reloaded');
    } catch (err) {
      if (!(err instanceof TokensFileError)) throw err;
      metrics.tokensReloads.inc({ outcome: 'invalid' });
      // Once per content: the file is polled every second and a bad edit must not flood the log.
      if (this.lastRefusal !== digest)
        logger.warn(
          { code: err.code, reason: err.message },
          'GUARDIAN_TOKENS_FILE changed but cannot be used; the tokens loaded before stay in use',
        );
      this.lastRefusal = digest;
    }
  }
}

function errorCode(err: unknown): string {
  return codeOf(err) ?? 'unknown';
}
