import { VKEY_FILE, listLogs, logFolder, readLogFile } from '@guardian/archive';

import { CliUsageError } from '../common/cli-error';
import { printJson } from '../common/cli-io';
import { EXIT, type ExitCode } from '../common/exit-codes';
import type { RecallContext } from './recall-context';

/**
 * `--log-key`: the verifier key of each writer's log on the span volume, in Go's note format
 * (`<origin>+<key id>+<base64 key>`), one a line, for an auditor to pin (docs/ARCHIVE_FORMAT.md#the-log). The key names
 * its origin, so no other label is printed. Through a sidecar the key is `GET /guardian/archive/log/vkey`.
 */
export async function logKeyCommand(ctx: RecallContext): Promise<ExitCode> {
  if (ctx.flags.url !== undefined)
    throw new CliUsageError(
      '--log-key reads the span folder; through a sidecar GET /guardian/archive/log/vkey',
    );
  const keys: { log: string; vkey: string }[] = [];
  for (const name of await listLogs(ctx.config.spanDir)) {
    const vkey = await readLogFile(logFolder(ctx.config.spanDir, name), VKEY_FILE);
    if (vkey !== null) keys.push({ log: name, vkey: vkey.toString('utf8').trim() });
  }
  if (ctx.flags.json) printJson(ctx.io, { logs: keys });
  else if (keys.length === 0) ctx.io.stdout.write(`no span log in ${ctx.config.spanDir}\n`);
  else for (const k of keys) ctx.io.stdout.write(`${k.vkey}\n`);
  return keys.length === 0 ? EXIT.NONE : EXIT.OK;
}
