import { createHash } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * This process's replica tag (docs/ARCHITECTURE.md#files): the first 8 hex of sha256(hostname, pid, start time),
 * unique per process, so two writers never share a run. The sidecar, the CLIs and the MCP server all take it from
 * here. `host` and `pid` default to this process's; tests pass others.
 */
export function replicaTag(startedAt: Date, who: { host?: string; pid?: number } = {}): string {
  const host = who.host ?? hostname();
  const pid = who.pid ?? process.pid;
  return createHash('sha256').update(`${host}\n${pid}\n${startedAt.toISOString()}`).digest('hex').slice(0, 8);
}
