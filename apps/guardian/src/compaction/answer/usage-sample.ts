import { Injectable } from '@nestjs/common';

import { silentlyTruncated } from '@guardian/compaction';

import type { AnswerFacts, Decision } from '../handoff';
import { RequestCounter } from '../request/request-counter';
import { WindowService } from '../request/window.service';
import { AnswerReporter } from './answer-reporter';

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
    private readonly counter: RequestCounter,
    private readonly windows: WindowService,
    private readonly reporter: AnswerReporter,
  ) {}

  take(facts: AnswerFacts, d: Decision, reported: number | undefined): void {
    // The fast path (rawForwarded 0) has only a byte bound of what it forwarded, an overestimate by the JSON around
    // the text: neither a calibration sample nor proof of a truncation.
    if (reported === undefined || d.rawForwarded <= 0) return;
    if (silentlyTruncated(reported, d.tokensAfter)) {
      this.windows.learn(facts.model, reported, 'truncation');
      this.reporter.backendTruncation(facts, { reported, forwarded: d.tokensAfter });
      return;
    }
    this.counter.observe(facts.model, reported, d.rawForwarded);
  }
}
