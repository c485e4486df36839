import { createHash } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * Facts about this process: the replica tag (ARCHITECTURE.md#files: the first 8 hex of sha256(hostname, pid, start
 * time),
 * unique per process, so two replicas never share a run).
 */
export class GuardianRuntime {
  readonly startedAt = new Date();
  readonly replica = createHash('sha256')
    .update(`${hostname()}\n${process.pid}\n${this.startedAt.toISOString()}`)
    .digest('hex')
    .slice(0, 8);
}
