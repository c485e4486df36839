import { replicaTag } from '@guardian/archive';

/** Facts about this process: when it started and its replica tag (docs/ARCHITECTURE.md#files). */
export class GuardianRuntime {
  readonly startedAt = new Date();
  readonly replica = replicaTag(this.startedAt);
}
