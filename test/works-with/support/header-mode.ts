import { CLIENTS } from '../clients';
import { CLIENT_ID_CASES } from './client-ids';
import { docSnippetIds } from './doc-snippets';
import { HEADER_CASES } from './header-cases';
import {
  HEADER_TABLE_HEAD,
  headerTableRow,
  runHeaderCase,
  type HeaderRow,
  type HeaderRunOptions,
} from './header-run';
import { runTwoDevelopers } from './header-two-developers';
import { today } from './report';

/**
 * `run-clients.ts --headers` (issue 21): every setting docs/sessions.md marks, with its real client, then two
 * developers through one sidecar. Prints one table row per case as it finishes and the whole table at the end;
 * true when every row passed (a control passes when it was caught) and no marked snippet went unrun.
 */
export async function headerMode(
  o: HeaderRunOptions & { only?: string; isolation: string },
): Promise<boolean> {
  const { only, isolation, ...opts } = o;
  process.stdout.write(`# session headers, as docs/sessions.md shows them; isolation: ${isolation}\n`);
  const cases = HEADER_CASES.filter(
    (c) => !only || c.client === only || CLIENTS.find((s) => s.bin === only)?.name === c.client,
  );
  const rows: HeaderRow[] = [];
  const harness = (client: string, setting: string, err: unknown): HeaderRow => ({
    date: today(),
    client,
    version: '-',
    setting,
    checked: '-',
    result: `FAIL: harness error: ${err instanceof Error ? err.message : String(err)}`,
    detail: [],
  });
  const print = (r: HeaderRow): void => {
    process.stdout.write(`${headerTableRow(r)}\n`);
    for (const d of r.detail) process.stdout.write(`#   ${d}\n`);
  };
  for (const c of cases) {
    // One case's harness failure is that case's row; the others still run.
    const row = await runHeaderCase(c, opts).catch((err: unknown) => harness(c.client, c.label, err));
    rows.push(row);
    print(row);
  }
  if (!only || only === 'two-developers') {
    const row = await runTwoDevelopers(opts).catch((err: unknown) => harness('two developers', '-', err));
    rows.push(row);
    print(row);
  }
  // Every setting the page marks for checking must have been run (here or by `--client-ids`): a snippet added to the
  // page without a case would otherwise look verified.
  const used = new Set([
    ...HEADER_CASES.flatMap((c) => c.snippets),
    // The client-id mode runs the settings that name no X-Guardian-Session (Qwen Code's `${session_id}`).
    ...CLIENT_ID_CASES.flatMap((c) => (c.snippet ? [c.snippet] : [])),
  ]);
  const unrun = docSnippetIds().filter((id) => !used.has(id));
  process.stdout.write(`\n${HEADER_TABLE_HEAD}\n${rows.map(headerTableRow).join('\n')}\n`);
  if (unrun.length) process.stdout.write(`# docs/sessions.md snippets no case runs: ${unrun.join(', ')}\n`);
  const ok = (r: HeaderRow): boolean => r.result === 'PASS' || r.result.startsWith('caught: ');
  return unrun.length === 0 && rows.length > 0 && rows.every(ok);
}
