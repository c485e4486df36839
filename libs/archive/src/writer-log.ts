import { hostname } from 'node:os';
import * as path from 'node:path';

import { loadLogKey } from './log-key';
import { SpanLog } from './span-log';
import { logFolder, logsRoot } from './span-log-read';

/** Where a writer keeps its log (issue 29). */
export interface WriterLogOptions {
  spanDir: string;
  /** The log's folder name under `<span dir>/.tlog/`: the writer (replica tag, `-capture` for the intake). */
  name: string;
  /** The checkpoint origin and key name (GUARDIAN_LOG_ORIGIN, then `/<name>`). */
  origin: string;
  /** GUARDIAN_LOG_KEY_FILE (a Kubernetes Secret mount); default `<span dir>/.tlog/log.key`, made at first start. */
  keyFile?: string | null;
}

/** The default key file on the span volume, shared by every writer there (each signs under its own origin). */
function defaultLogKeyFile(spanDir: string): string {
  return path.join(logsRoot(spanDir), 'log.key');
}

/**
 * The log of one span writer, opened at its first commit (the key and the folder are I/O, a constructor is not):
 * entries handed over before it is open wait in order and go into its first checkpoint.
 */
export class WriterLog {
  private log: SpanLog | null = null;
  private opening: Promise<void> | null = null;
  private readonly waiting: string[] = [];

  constructor(
    private readonly opts: WriterLogOptions,
    private readonly onWarning: (cause: unknown) => void,
  ) {}

  /** Hands entries over in commit order; never throws and never waits (a failure is a warning). */
  append(entries: readonly string[]): void {
    if (this.log !== null) {
      this.log.append(entries).catch(() => undefined); // reported by the log's own onWarning
      return;
    }
    this.waiting.push(...entries);
    this.opening ??= this.open();
  }

  /** Settles once every entry handed over so far is in a checkpoint, or has failed and been reported. */
  async settled(): Promise<void> {
    await this.opening;
    // Entries still waiting on a log that failed to open (a key being made by another writer, a full volume): one
    // more try before shutdown, not only at the next commit, which may never come.
    if (this.log === null && this.waiting.length > 0) await (this.opening ??= this.open());
    await this.log?.settled();
  }

  /** The open log, if it opened. */
  get current(): SpanLog | null {
    return this.log;
  }

  private async open(): Promise<void> {
    try {
      const keyFile = this.opts.keyFile ?? defaultLogKeyFile(this.opts.spanDir);
      const seed = await loadLogKey({
        file: keyFile,
        create: this.opts.keyFile == null,
        name: this.opts.origin,
      });
      this.log = await SpanLog.open({
        dir: logFolder(this.opts.spanDir, this.opts.name),
        origin: this.opts.origin,
        seed,
        onWarning: this.onWarning,
      });
      this.append(this.waiting.splice(0));
    } catch (cause) {
      // The spans are sealed whatever happens here (fail-open, ARCHITECTURE.md#fail-open); the entries wait for the
      // next commit's try, and --verify names every span without an entry meanwhile.
      this.onWarning(cause);
    } finally {
      this.opening = null;
    }
  }
}

/**
 * A writer's log options from GUARDIAN_LOG_ORIGIN (a prefix; default `context-guardian/<host name>`, which in a
 * Kubernetes pod names the deployment's pod) and GUARDIAN_LOG_KEY_FILE: the origin is `<prefix>/<writer>`, so every
 * writer on a volume has its own log and key name.
 */
export function writerLog(opts: {
  name: string;
  originPrefix?: string | undefined;
  keyFile?: string | undefined;
}): Omit<WriterLogOptions, 'spanDir'> {
  const prefix = opts.originPrefix ?? `context-guardian/${hostname().replace(/[^A-Za-z0-9._-]/g, '-')}`;
  return { name: opts.name, origin: `${prefix}/${opts.name}`, keyFile: opts.keyFile ?? null };
}
