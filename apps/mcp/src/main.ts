import { homedir } from 'node:os';

import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { Command } from 'commander';

import { createLogger, packageVersion } from '@guardian/telemetry';
import { codeOf } from '@guardian/errors';

import { loadMcpConfig } from './mcp-config';
import { createGuardianMcpServer } from './server';
import { toolContext } from './tool-kit';

/** `--url <url>`: read the archive through that sidecar (team mode); GUARDIAN_URL with GUARDIAN_TOKEN does too. */
function flagUrl(argv: string[]): string | undefined {
  const opts = new Command()
    .name('context-guardian-mcp')
    .description('Stdio MCP server: read-only tools over the Context Guardian archive and sidecar.')
    .option('--url <url>', 'read the archive through this sidecar (team mode; GUARDIAN_TOKEN is sent)')
    .parse(argv, { from: 'user' })
    .opts<{ url?: string }>();
  return opts.url;
}

// context-guardian-mcp: a stdio MCP server. stdout carries the protocol, so every log line goes to stderr
// (seed: "logs to stderr only"; HOUSE: MCP reference servers).

/** Starts the server on stdin/stdout; resolves once it is connected. */
export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  const config = loadMcpConfig(process.env, homedir(), new Date(), flagUrl(argv));
  const logger = createLogger({
    name: 'context-guardian-mcp',
    level: config.logLevel,
    destination: process.stderr,
  });
  for (const warning of config.paths.warnings) logger.warn(warning);
  const server = createGuardianMcpServer(toolContext(config, logger), {
    name: 'context-guardian',
    version: packageVersion(),
  });
  const transport = new StdioServerTransport();
  await server.connect(transport);
  // The mode and the sidecar's URL, never the token (ARCHITECTURE.md#access).
  logger.info(
    { tools: 7, archive: config.remote ? config.proxyUrl : 'local' },
    'context-guardian-mcp serving on stdio',
  );
  // The client ends the session by closing stdin. No exit is forced then: calls still in flight answer
  // first, and the process ends by itself once nothing is left to do.
  process.stdin.once('end', () => logger.info('stdin closed; exiting when in-flight calls finish'));
}

if (require.main === module) {
  main().catch((err: unknown) => {
    const code = codeOf(err) ?? 'MCP_START_FAILED';
    process.stderr.write(
      `context-guardian-mcp: ${code}: ${err instanceof Error ? err.message : String(err)}\n`,
    );
    process.exitCode = 2;
  });
}
