import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { hostname } from 'node:os';

import { SealedArchive, sharedLogsSupported, writerLog, type SealedArchiveOptions } from '@guardian/archive';
import type { GuardianClient } from '@guardian/client';

import type { CliConfig } from '../common/cli-config';
import { CAPTURE_ROUTE, LedgerStore, recoverOffset, sessionRuns, type Ledger } from './capture-ledger';
import { parseHookInput, sessionHashOf, type HookInput } from './hook-input';
import { captureRunName, ccPaths, type HookIo } from './hook-io';
import type { HookLog } from './hook-log';
import { buildSnapshot, isEmptySnapshot, renderSnapshot } from './snapshot';
import { SnapshotStore } from './snapshot-store';
import { archivedLine, isRecord, readCompleteLines, readTailLines, type LineBatch } from './transcript-lines';

export interface CaptureContext {
  io: HookIo;
  config: CliConfig;
  log: HookLog;
  replica: string;
  /** Transcript bytes per span; 2 MB (seed: "splits a long first capture into 2 MB spans"). */
  maxSpanBytes?: number;
  /** Fires at the 20 s self-imposed limit: the capture stops between spans, so no run is left torn. */
  deadline?: AbortSignal;
  /**
   * Team mode (GUARDIAN_URL with GUARDIAN_TOKEN): the spans go to the sidecar's archive instead of the local one; the
   * ledger and the snapshot stay on this machine, where the resume hook reads them.
   */
  sidecar?: () => GuardianClient | undefined;
}

const TWO_MB = 2 * 1024 * 1024;
const PRECOMPACT_MARKS = 50;

/**
 * SealedArchive names runs `<stamp>-<hash 8>-<replica>`; ARCHITECTURE.md#files names capture runs
 * `cc-<hash 12>-<replica>`. `runName` asks for that name; every reader here finds a session's runs through
 * run.json, so captures stay correct whichever name the archive gives the run.
 */
type CaptureArchiveOptions = SealedArchiveOptions & {
  runName?: (ctx: { sessionHash: string; replica: string }) => string;
};

function modelOf(messages: unknown[]): string {
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const line = messages[i];
    if (isRecord(line) && isRecord(line.message) && typeof line.message.model === 'string')
      return line.message.model;
  }
  return 'unknown';
}

/** True when `offset` sits at a line start, the only place a capture may resume from. */
async function atLineStart(file: string, offset: number): Promise<boolean> {
  if (offset === 0) return true;
  const handle = await fsp.open(file, 'r');
  try {
    const byte = Buffer.alloc(1);
    await handle.read(byte, 0, 1, offset - 1);
    return byte[0] === 0x0a;
  } finally {
    await handle.close();
  }
}

interface CopyResult {
  end: number;
  spans: number;
  run: string | null;
}

/**
 * The local capture's log (issue 29, ADR 0028): one per host, `capture-<8 hex of sha256(host name)>`, which the hook's
 * short processes take in turns (each waits for the lock, up to its deadline). Off Linux there is no lock that dies
 * with its process, so the hook keeps no log there and its spans name none (docs/ARCHIVE_FORMAT.md#the-log).
 */
function captureLog(ctx: CaptureContext): SealedArchiveOptions['log'] {
  if (!sharedLogsSupported()) return null;
  const name = `capture-${createHash('sha256').update(hostname()).digest('hex').slice(0, 8)}`;
  return {
    ...writerLog({ name, originPrefix: ctx.config.logOrigin, keyFile: ctx.config.logKeyFile }),
    shared: true,
    signal: ctx.deadline,
  };
}

async function copyNewLines(
  ctx: CaptureContext,
  input: { sessionHash: string; file: string; offset: number },
): Promise<CopyResult> {
  const { config, log } = ctx;
  const options: CaptureArchiveOptions = {
    spanDir: config.spanDir,
    anchorDir: config.anchorDir,
    keepSpans: config.keepSpans,
    replica: ctx.replica,
    runName: ({ sessionHash, replica }) => captureRunName(sessionHash, replica),
    log: captureLog(ctx),
    onWarning: (w) => void log.failure('capture', w.cause, { run: w.run, warning: w.code }),
  };
  const archive = new SealedArchive(options);
  try {
    return await copyLocally(ctx, input, archive);
  } finally {
    // The last checkpoint, then the log let go for the next capture on this host.
    await archive.close();
  }
}

function copyLocally(
  ctx: CaptureContext,
  input: { sessionHash: string; file: string; offset: number },
  archive: SealedArchive,
): Promise<CopyResult> {
  const { io } = ctx;
  return copyBatches(ctx, input, async (batch, messages) => {
    const ref = await archive.write({
      kind: 'capture',
      sessionHash: input.sessionHash,
      route: CAPTURE_ROUTE,
      model: modelOf(messages),
      messages,
      // For capture spans first_index is the transcript byte offset of the first line (docs/ARCHIVE_FORMAT.md).
      firstIndex: batch.start,
      at: io.now(),
    });
    return { end: batch.end, run: ref.run };
  });
}

/**
 * Team mode: each batch is posted to the sidecar, which writes it only where its archive of this session ends. When
 * it ends elsewhere (this machine's ledger was lost, or a capture of this session ran on another), the copy starts
 * once more from there.
 */
async function postNewLines(
  ctx: CaptureContext,
  sidecar: GuardianClient,
  input: { sessionHash: string; file: string; offset: number },
): Promise<CopyResult> {
  let from = input.offset;
  for (let attempt = 1; ; attempt += 1) {
    let elsewhere: number | undefined;
    const copied = await copyBatches(ctx, { ...input, offset: from }, async (batch, messages) => {
      const answer = await sidecar.capture({
        session_hash: input.sessionHash,
        offset: batch.start,
        model: modelOf(messages),
        lines: messages,
      });
      if (answer.accepted) return { end: answer.archived_end, run: answer.run };
      elsewhere = answer.archived_end;
      return 'stop';
    });
    if (elsewhere === undefined || attempt === 2) return copied;
    const size = (await fsp.stat(input.file)).size;
    if (elsewhere > size || !(await atLineStart(input.file, elsewhere))) {
      // The sidecar's copy does not match this transcript at all: nothing is sent, the log says why.
      await ctx.log.write({
        command: 'capture',
        code: 'CC_TRANSCRIPT_CHANGED',
        session: input.sessionHash.slice(0, 12),
        offset: elsewhere,
        size,
      });
      return copied;
    }
    from = elsewhere;
  }
}

/** Reads the new complete lines in batches and hands each to `put`, until the deadline or `put` says stop. */
async function copyBatches(
  ctx: CaptureContext,
  input: { sessionHash: string; file: string; offset: number },
  put: (batch: LineBatch, messages: unknown[]) => Promise<{ end: number; run: string | null } | 'stop'>,
): Promise<CopyResult> {
  const result: CopyResult = { end: input.offset, spans: 0, run: null };
  const batches = readCompleteLines({
    file: input.file,
    offset: input.offset,
    maxBatchBytes: ctx.maxSpanBytes ?? TWO_MB,
  });
  for await (const batch of batches) {
    if (ctx.deadline?.aborted === true) {
      await ctx.log.write({
        command: 'capture',
        code: 'CC_CAPTURE_DEADLINE',
        session: input.sessionHash.slice(0, 12),
        offset: result.end,
      });
      break;
    }
    const done = await put(batch, batch.lines.map(archivedLine));
    if (done === 'stop') break;
    result.end = done.end;
    result.spans += 1;
    result.run = done.run ?? result.run;
  }
  return result;
}

async function writeSnapshot(
  ctx: CaptureContext,
  input: HookInput,
  sessionHash: string,
  file: string,
): Promise<void> {
  const store = new SnapshotStore(ccPaths(ctx.config.dataDir).snapshotsDir, ctx.io.now);
  await store.removeExpired();
  const snapshot = buildSnapshot(await readTailLines(file, TWO_MB));
  if (isEmptySnapshot(snapshot)) return;
  await store.write({
    session_hash: sessionHash,
    cwd: input.cwd ?? null,
    trigger: input.trigger ?? null,
    text: renderSnapshot(snapshot),
  });
}

async function captureLocked(
  ctx: CaptureContext,
  input: HookInput,
  file: string,
  ledgers: LedgerStore,
  sidecar: GuardianClient | undefined,
): Promise<void> {
  const sessionHash = sessionHashOf(input);
  const session = sessionHash.slice(0, 12);
  const event = input.hook_event_name ?? null;
  // A missing transcript fails here, once, before either step (the caller logs it).
  const size = (await fsp.stat(file)).size;
  if (event === 'PreCompact') {
    // The snapshot first: it is what the SessionStart(compact) hook needs in a few seconds.
    await writeSnapshot(ctx, input, sessionHash, file).catch((err: unknown) =>
      ctx.log.failure('capture', err, { session, step: 'snapshot' }),
    );
  }
  const ledger = await ledgers.read(sessionHash);
  // In team mode the spans are on the sidecar, which checks the offset itself; locally they are read here.
  const runs =
    sidecar === undefined ? await sessionRuns(ctx.config.spanDir, sessionHash, ledger?.runs ?? []) : [];
  const offset = Math.max(ledger?.offset ?? 0, await recoverOffset(ctx.config.spanDir, runs));
  let copied: CopyResult = { end: offset, spans: 0, run: null };
  if (size < offset || !(await atLineStart(file, offset))) {
    // Claude Code only appends; a file that no longer matches the offset was replaced. Copying would
    // duplicate or tear lines, so nothing is copied and the log says why.
    await ctx.log.write({ command: 'capture', code: 'CC_TRANSCRIPT_CHANGED', session, offset, size });
  } else if (sidecar !== undefined) {
    copied = await postNewLines(ctx, sidecar, { sessionHash, file, offset });
  } else {
    copied = await copyNewLines(ctx, { sessionHash, file, offset });
  }
  const next: Ledger = {
    v: 1,
    session_hash: sessionHash,
    transcript_path: file,
    cwd: input.cwd ?? ledger?.cwd ?? null,
    offset: copied.end,
    last_capture_at: ctx.io.now().toISOString(),
    last_event: event,
    runs: [...new Set([...(ledger?.runs ?? []), ...runs, ...(copied.run === null ? [] : [copied.run])])],
    precompact: [
      ...(ledger?.precompact ?? []),
      ...(event === 'PreCompact' ? [{ at: ctx.io.now().toISOString(), offset: copied.end }] : []),
    ].slice(-PRECOMPACT_MARKS),
  };
  await ledgers.write(next);
}

/**
 * `capture`: the PreCompact and SessionEnd hook. Copies the transcript lines not archived yet into a sealed
 * capture run and, on PreCompact, saves the snapshot `resume` restores. Always returns 0: exit 2 from a
 * PreCompact hook would block Claude Code's compaction, and an archiver must never do that (seed).
 */
export async function captureCommand(ctx: CaptureContext): Promise<0> {
  let session: string | undefined;
  try {
    const input = parseHookInput(await ctx.io.readStdin());
    session = sessionHashOf(input).slice(0, 12);
    if (input.transcript_path === undefined) {
      await ctx.log.write({ command: 'capture', code: 'CC_NO_TRANSCRIPT', session });
      return 0;
    }
    // Resolved here, so a bad GUARDIAN_URL is logged like any other problem and the hook still exits 0.
    const sidecar = ctx.sidecar?.();
    const ledgers = new LedgerStore(ccPaths(ctx.config.dataDir).sessionsDir);
    const unlock = await ledgers.lock(sessionHashOf(input), ctx.io.now());
    if (unlock === null) {
      // Another capture of this session is running; whatever it leaves, the next capture copies.
      await ctx.log.write({ command: 'capture', code: 'CC_CAPTURE_BUSY', session });
      return 0;
    }
    try {
      await captureLocked(ctx, input, input.transcript_path, ledgers, sidecar);
    } finally {
      await unlock();
    }
  } catch (err) {
    await ctx.log.failure('capture', err, session === undefined ? {} : { session });
  }
  return 0;
}
