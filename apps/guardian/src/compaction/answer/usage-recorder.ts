import { Injectable } from '@nestjs/common';

import { isoTimestamp } from '@guardian/archive';
import { MemoStore, type UsageRecord } from '@guardian/memo';

import type { AnswerFacts, Decision } from '../handoff';
import { SessionTable } from '../../state/session-table';
import { chooseUsage } from '../request/usage-selection';
import { AnswerReporter } from './answer-reporter';

/**
 * The session's LRU slot and its `/guardian/usage` record after an answer. The record follows the session's main
 * conversation and not its probes or helper requests (ADR 0010).
 */
@Injectable()
export class UsageRecorder {
  constructor(
    private readonly memo: MemoStore,
    private readonly sessions: SessionTable,
    private readonly reporter: AnswerReporter,
  ) {}

  /** `promptTokens`: the upstream's own count of what was forwarded, when its answer reported one. */
  async record(facts: AnswerFacts, d: Decision, promptTokens: number | undefined): Promise<void> {
    this.sessions.touch(facts.sessionHash, d.compactedAt);
    this.reporter.activeSessions(this.sessions.size);
    // A sub-agent works for the session's developer: counted, and the line keeps showing their own conversation.
    if (facts.subagent === true) {
      this.reporter.usageSideRequest('subagent');
      return;
    }
    const previous = await this.memo.getUsage(facts.sessionHash);
    const candidate = facts.candidate;
    const now = new Date();
    const choice = chooseUsage(previous, candidate, now.getTime());
    if (!choice.follow) {
      // A side request: the line keeps showing the conversation the developer is in, and the operator sees why.
      this.reporter.usageSideRequest(choice.kind);
      return;
    }
    // The upstream's own prompt count of what was forwarded is exact; without one, guardian's count stands.
    const used = promptTokens ?? d.tokensAfter;
    // Built field by field in the record's order: the optional fields as spreads of little objects cost 1.5 us on
    // every answered request (overhead bench profile).
    const record: UsageRecord = { session: facts.sessionHash } as UsageRecord;
    if (facts.ownerHash !== undefined) record.owner = facts.ownerHash;
    if (facts.sessionSource !== undefined) record.session_source = facts.sessionSource;
    record.window = facts.window;
    record.used_after_compaction = used;
    record.pct = Math.round((used / facts.window) * 1000) / 10;
    record.count_source = promptTokens !== undefined ? 'tokenize' : facts.countSource;
    record.model = facts.model;
    record.last_compaction_at = d.compactedAt ?? previous?.last_compaction_at ?? null;
    record.at = isoTimestamp(now);
    record.tools = candidate.tools;
    if (facts.sessionName !== undefined) record.name = facts.sessionName;
    record.turns = (previous?.turns ?? 0) + 1;
    await this.memo.putUsage(record);
  }
}
