import { Injectable, type OnModuleDestroy } from '@nestjs/common';

import { UsageLog, type UsageLogInput } from '@guardian/archive';

import { GuardianState } from '../state/guardian-state';
import { FailOpen } from './fail-open';

/**
 * Writes the usage log (libs/archive UsageLog): one line per answered request and per summariser call, with the
 * tokens the backend's own usage reported. Behind the request, like the compaction log: a line that cannot be written
 * is a fail-open (ARCHITECTURE.md#fail-open rule 3), counted and logged once, and the answer is not affected.
 */
@Injectable()
export class UsageLedger implements OnModuleDestroy {
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly log: UsageLog,
    private readonly failOpen: FailOpen,
    private readonly state: GuardianState,
  ) {}

  later(line: UsageLogInput): void {
    const p = this.write(line).finally(() => this.pending.delete(p));
    this.pending.add(p);
    this.state.trackBehind(p);
  }

  /** Lines still being written are written before the process stops (a graceful stop loses none). */
  async onModuleDestroy(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  private async write(line: UsageLogInput): Promise<void> {
    try {
      await this.log.append(line);
    } catch (err) {
      const route =
        line.route === 'chat' || line.route === 'messages' || line.route === 'responses'
          ? line.route
          : 'other';
      this.failOpen.report('archive', 'usage_log_write', { route, model: line.model, err });
    }
  }
}
