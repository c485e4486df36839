import { Injectable, type OnModuleDestroy } from '@nestjs/common';

import { CaptureJournal, SealedArchive } from '@guardian/archive';

import { GuardianConfig } from '../../config/guardian-config';
import { AnswerReporter } from './answer-reporter';

/**
 * GUARDIAN_CAPTURE=journal (off by default: it writes every message to disk in clear text): records each session's
 * messages, not only what compaction evicts, in journal segments sealed as they close. Runs behind the request;
 * a failed append fails open and the next turn's resend retries it.
 */
@Injectable()
export class CaptureService implements OnModuleDestroy {
  private readonly journal: CaptureJournal | undefined;
  /** One append at a time per session: the journal marks messages seen only once written, so overlapping turns would both write them. */
  private readonly queues = new Map<string, Promise<void>>();

  constructor(
    config: GuardianConfig,
    archive: SealedArchive,
    private readonly reporter: AnswerReporter,
  ) {
    this.journal =
      config.archive.capture === 'journal'
        ? new CaptureJournal({ archive, maxSessions: config.compaction.maxSessions })
        : undefined;
  }

  record(input: {
    sessionHash: string;
    ownerHash?: string;
    sessionName?: string;
    route: 'chat' | 'messages' | 'responses';
    messages: unknown[];
  }): void {
    const journal = this.journal;
    if (!journal) return;
    const previous = this.queues.get(input.sessionHash) ?? Promise.resolve();
    const next = previous
      .then(() =>
        journal.record({
          sessionHash: input.sessionHash,
          ownerHash: input.ownerHash,
          sessionName: input.sessionName,
          messages: input.messages,
          at: new Date(),
        }),
      )
      .then(
        () => undefined,
        (err: unknown) => this.reporter.behindFailed('archive', 'journal_write', input.route, err),
      );
    this.queues.set(input.sessionHash, next);
    this.reporter.behind(next);
    void next.then(() => {
      if (this.queues.get(input.sessionHash) === next) this.queues.delete(input.sessionHash);
    });
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.allSettled([...this.queues.values()]);
    await this.journal?.close();
  }
}
