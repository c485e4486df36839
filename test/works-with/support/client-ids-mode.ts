import { CLIENTS } from '../clients';
import {
  CLIENT_ID_CASES,
  CLIENT_ID_TABLE_HEAD,
  clientIdTableRow,
  runClientIdCase,
  type ClientIdRow,
} from './client-ids';
import { runSubAgent } from './client-ids-subagent';
import type { HeaderRunOptions } from './header-run';
import { today } from './report';

/**
 * `run-clients.ts --client-ids` (issue 28, Done-when 1): each client with no X-Guardian-Session, two developers
 * through one sidecar, each found by the id its client sent; then a Claude Code turn that starts a sub-agent. Prints
 * one row per case as it finishes and the whole table at the end; true when every case passed. The sub-agent row
 * records what the client sent and fails only on what guardian did with it.
 */
export async function clientIdsMode(
  o: HeaderRunOptions & { only?: string; isolation: string },
): Promise<boolean> {
  const { only, isolation, ...opts } = o;
  process.stdout.write(`# client session ids, no X-Guardian-Session configured; isolation: ${isolation}\n`);
  const named = (client: string): boolean =>
    !only || client === only || CLIENTS.find((s) => s.bin === only)?.name === client;
  const rows: ClientIdRow[] = [];
  const harness = (client: string, setting: string, err: unknown): ClientIdRow => ({
    date: today(),
    client,
    version: '-',
    setting,
    seen: '-',
    result: `FAIL: harness error: ${err instanceof Error ? err.message : String(err)}`,
    detail: [],
  });
  const print = (r: ClientIdRow): void => {
    process.stdout.write(`${clientIdTableRow(r)}\n`);
    for (const d of r.detail) process.stdout.write(`#   ${d}\n`);
  };
  for (const c of CLIENT_ID_CASES.filter((x) => named(x.client))) {
    // One case's harness failure is that case's row; the others still run.
    const row = await runClientIdCase(c, opts).catch((err: unknown) => harness(c.client, c.setting, err));
    rows.push(row);
    print(row);
  }
  if (named('claude-code') || only === 'subagent') {
    const row = await runSubAgent(opts).catch((err: unknown) => harness('claude-code', 'sub-agent', err));
    rows.push(row);
    print(row);
  }
  process.stdout.write(`\n${CLIENT_ID_TABLE_HEAD}\n${rows.map(clientIdTableRow).join('\n')}\n`);
  return rows.length > 0 && rows.every((r) => !r.result.startsWith('FAIL'));
}
