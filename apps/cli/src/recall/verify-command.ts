import { sealAll, type RunVerdict } from '@guardian/archive';

import { printJson } from '../common/cli-io';
import { EXIT, type ExitCode } from '../common/exit-codes';
import type { RecallContext } from './recall-context';

function verdictLine(v: RunVerdict): string {
  if (v.break !== null) {
    const at = v.break.seq !== null ? ` at seq ${v.break.seq}` : '';
    return `${v.run} BREAK ${v.break.kind}${at}: ${v.break.detail}`;
  }
  const anchored = v.anchored ? ', anchored' : '';
  return v.status === 'pruned-ok'
    ? `${v.run} OK (${v.pruned} pruned as expected${anchored})`
    : `${v.run} OK${anchored ? ' (anchored)' : ''}`;
}

/** `--verify [--all | --run R]`: OK per run or its first break; exit 0 only when every run is OK. */
export async function verifyCommand(ctx: RecallContext): Promise<ExitCode> {
  const result = await sealAll(ctx.archive, { run: ctx.flags.run });
  if (ctx.flags.json) printJson(ctx.io, result);
  else {
    for (const verdict of result.runs) ctx.io.stdout.write(`${verdictLine(verdict)}\n`);
    const broken = result.runs.filter((r) => r.status === 'break').length;
    ctx.io.stdout.write(
      broken === 0
        ? `${result.runs.length} run(s) checked: all OK\n`
        : `${result.runs.length} run(s) checked: ${broken} broken\n`,
    );
  }
  return result.ok ? EXIT.OK : EXIT.NONE;
}

/** `--heads`: each run's chain head. */
export async function headsCommand(ctx: RecallContext): Promise<ExitCode> {
  const heads = await ctx.archive.heads();
  if (ctx.flags.json) printJson(ctx.io, heads);
  else for (const h of heads) ctx.io.stdout.write(`${h.run} seq ${h.seq} ${h.head}\n`);
  return EXIT.OK;
}
