import { Injectable } from '@nestjs/common';

import {
  capPins,
  carriedByBlock,
  carriedLedger,
  carriedPins,
  mergePins,
  mustKeepBullets,
  pinsByMessage,
  renderSummaryBlock,
  tokensForChars,
  type NeutralMessage,
} from '@guardian/compaction';
import { MemoStore, type MemoEntry } from '@guardian/memo';
import type { NativeHandleOutcome } from '@guardian/telemetry';

import { GuardianConfig } from '../../config/guardian-config';
import { pendingStart } from '../decide/stretch-service';
import { adapterFor } from '../request/request-stage';
import {
  assertHandleOwner,
  contentHash,
  handleRefused,
  HandleSealer,
  type HandleClaims,
} from './compaction-handle';
import { NativeArchive } from './native-archive';

/**
 * What a compaction's block carries beyond its summary: the pins and the instruction ledger of the messages before
 * `cut`. A block of ours among them (a compaction item or block sent back, then compacted again) carries its own on:
 * its bullets are the user's words from messages the client no longer sends, read back whole, not as typed text.
 */
export function nativeCarried(
  opts: { summary: string; mustKeep: readonly string[]; messages: readonly NeutralMessage[]; cut: number },
  limits: { pinMaxChars: number; ledgerMaxChars: number },
): { mustKeep: string[]; ledger: string[] } {
  const messages = opts.messages.slice(0, opts.cut);
  const blocks = messages.map((m) => carriedByBlock(m.text));
  const typed = pinsByMessage(messages);
  const pins = carriedPins({
    byMessage: messages.map((_, i) => blocks[i]?.pins ?? typed[i] ?? []),
    cut: messages.length,
    mustKeep: opts.mustKeep,
    summary: opts.summary,
    maxChars: limits.pinMaxChars,
  });
  const said = messages.filter((_, i) => blocks[i] === undefined);
  const ledger = capPins(
    mergePins(
      ...blocks.map((b) => b?.ledger ?? []),
      carriedLedger({ messages: said, cut: said.length, maxChars: limits.ledgerMaxChars, carried: pins }),
    ),
    limits.ledgerMaxChars,
  );
  // Pins are derived from the messages a client resends; after a native compaction it resends none of them, so the
  // memo entry carries them (and the ledger) for the expansion.
  return { mustKeep: mergePins(pins, opts.mustKeep), ledger };
}

/** One expansion: the block's text, and where it came from (guardian_native_handles_total's outcome). */
export interface Expanded {
  text: string;
  outcome: Extract<NativeHandleOutcome, 'memo' | 'block' | 'rebuilt' | 'lost'>;
  claims: HandleClaims;
}

/**
 * Issues and opens guardian's compaction handles (docs/native-compaction.md, "The handle"): sealed with the owner and
 * the log checkpoint that covers their span; opened into guardian's summary block from the memo, or, when the memo
 * no longer holds it (evicted, a restart with the in-memory memo), rebuilt from the sealed span the handle names.
 */
@Injectable()
export class NativeHandles {
  constructor(
    private readonly config: GuardianConfig,
    private readonly sealer: HandleSealer,
    private readonly memo: MemoStore,
    private readonly archive: NativeArchive,
  ) {}

  /** The handle of a compaction, naming the checkpoint that covers its chain head (waited for: see position()). */
  async issue(claims: Omit<HandleClaims, 'log'>): Promise<string> {
    return this.sealer.seal({ ...claims, log: await this.archive.position(claims.chainHead) });
  }

  /**
   * The summary block a handle stands for. Refuses a handle that does not verify, that does not match `content` (an
   * Anthropic block's text), or that belongs to another owner than the request's (`owner`, its owner hash).
   */
  async expand(handle: string, owner: string | undefined, content?: string): Promise<Expanded> {
    const claims = this.sealer.open(handle);
    if (content !== undefined && claims.content !== contentHash(content)) throw handleRefused();
    assertHandleOwner(claims, owner);
    if (content !== undefined) return { text: content, outcome: 'block', claims };
    const held = await this.memo.get(claims.session, claims.memoKey);
    if (held) return { text: nativeBlock(claims, held), outcome: 'memo', claims };
    const rebuilt = await this.rebuild(claims);
    if (rebuilt) return { text: nativeBlock(claims, rebuilt), outcome: 'rebuilt', claims };
    return { text: nativeBlock(claims, undefined), outcome: 'lost', claims };
  }

  /**
   * The memo entry rebuilt from the span the handle names: its summary as written, its pins and ledger read again
   * from its messages (the newest span of a chain holds the previous block as a message, so it is enough). Stored
   * again, so the next turn that resends the handle finds it in the memo.
   */
  private async rebuild(claims: HandleClaims): Promise<MemoEntry | undefined> {
    if (claims.chainHead === null) return undefined;
    const span = await this.archive.open(claims.chainHead, claims.owner ?? null, claims.log?.sha256);
    const adapter = span?.route ? adapterFor(span.route) : undefined;
    if (!span || span.summary === null || !adapter) return undefined;
    const messages = span.messages
      .map((item) => adapter.readItem(item))
      .filter((m): m is NeutralMessage => m !== undefined);
    const summary = span.summary;
    const carried = nativeCarried(
      { summary, mustKeep: mustKeepBullets(summary), messages, cut: messages.length },
      this.config.compaction,
    );
    const counter = { charsPerToken: this.config.compaction.charsPerToken, factor: 1 };
    const entry: MemoEntry = {
      summary,
      mustKeep: carried.mustKeep,
      ...(carried.ledger.length > 0 ? { ledger: carried.ledger } : {}),
      cut: claims.cut,
      from: claims.from,
      prefixHash: claims.memoKey,
      span: claims.chainHead,
      spans: [claims.chainHead],
      summaryTokens: tokensForChars(summary.length, counter),
      createdAt: new Date().toISOString(),
    };
    if (this.config.summariser.memo) await this.memo.put(claims.session, entry);
    return entry;
  }
}

/** Guardian's summary block for a handle: the memo entry's, or (none to be had) one that names the span only. */
export function nativeBlock(claims: HandleClaims, entry: MemoEntry | undefined): string {
  return renderSummaryBlock({
    summary:
      entry?.summary ??
      'The summary of this stretch could not be rebuilt (its span is gone or was changed); the archived span named above held the originals.',
    evictedMessages: claims.cut - claims.from,
    spans: entry?.spans ?? (claims.chainHead ? [claims.chainHead] : []),
    spanTotal: entry?.spanTotal,
    deferred: entry ? pendingStart(entry) !== undefined : false,
    pins: entry?.mustKeep ?? [],
    ledger: entry?.ledger ?? [],
  });
}
