import { Injectable } from '@nestjs/common';

import { silentlyTruncated } from '@guardian/compaction';

import { GuardianConfig } from '../../config/guardian-config';
import type { FormatAdapter } from '../../formats/format-adapter';
import type { AnswerFacts, Decision } from '../handoff';
import { parseWhole } from '../request/conversation-reader';
import { RequestCounter } from '../request/request-counter';
import { WindowService } from '../request/window.service';
import { AnswerReporter } from './answer-reporter';

/** The client's bytes the fast path forwarded unread (ADR 0013), with the adapter that can read them. */
export interface UnreadRequest {
  body: Buffer;
  adapter: FormatAdapter;
}

/**
 * What the upstream's prompt count teaches (issue 28 item 5): a calibration sample, or, when the count is well under
 * what guardian counted and forwarded, a truncation the backend did not report (Ollama past `num_ctx`; a chat route
 * that ignores it). A truncated count would teach the calibration a factor that undercounts every later request, so
 * it is not a sample; it is the most the backend kept, so it becomes the model's window and the next request is
 * compacted to fit it.
 */
@Injectable()
export class UsageSample {
  constructor(
    private readonly config: GuardianConfig,
    private readonly counter: RequestCounter,
    private readonly windows: WindowService,
    private readonly reporter: AnswerReporter,
  ) {}

  /** `unread`: the request's bytes when the fast path forwarded them without reading them. */
  take(facts: AnswerFacts, d: Decision, reported: number | undefined, unread?: UnreadRequest): void {
    if (reported === undefined) return;
    if (d.rawForwarded <= 0) {
      this.fastPathAnswer(facts, d, reported, unread);
      return;
    }
    if (silentlyTruncated(reported, d.tokensAfter)) {
      this.truncated(facts, reported, d.tokensAfter);
      return;
    }
    this.counter.observe(facts.model, reported, d.rawForwarded);
  }

  /**
   * A fast-path answer is no calibration sample: its only count is a byte bound, an overestimate by the JSON around
   * the text. It can still show a truncation, and it is where one happens first: the fast path takes the requests that
   * fit the window guardian believes, and a backend that silently keeps a smaller one cuts exactly those (issue 28,
   * Done-when 3: three truncated answers went unnoticed after calibration). The byte bound is at least the count of
   * the same bytes, so a report that is not well under it is no truncation; only one that is costs a read and a count
   * of the request, as the full path would have made, behind the answer.
   */
  private fastPathAnswer(facts: AnswerFacts, d: Decision, reported: number, unread?: UnreadRequest): void {
    if (!unread || !silentlyTruncated(reported, d.tokensAfter)) return;
    const read = parseWhole(unread.adapter, unread.body, { countTools: this.config.compaction.countTools });
    if (read.kind !== 'conversation') return;
    const forwarded = this.counter.estimate(read.conv).tokens;
    if (silentlyTruncated(reported, forwarded)) this.truncated(facts, reported, forwarded);
  }

  private truncated(facts: AnswerFacts, reported: number, forwarded: number): void {
    this.windows.learn(facts.model, reported, 'truncation');
    this.reporter.backendTruncation(facts, { reported, forwarded });
  }
}
