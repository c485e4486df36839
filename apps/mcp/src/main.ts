import { homedir } from 'node:os';

import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

import { Receipts } from '@guardian/archive';
import { createLogger, packageVersion } from '@guardian/telemetry';
import { codeOf } from '@guardian/errors';

import { loadMcpConfig } from './mcp-config';
import { createGuardianMcpServer } from './server';

// context-guardian-mcp: a stdio MCP server. stdout carries the protocol, so every log line goes to stderr
// (seed: "logs to stderr only"; HOUSE: MCP reference servers).

/** Starts the server on stdin/stdout; resolves once it is connected. */
export async function main(): Promise<void> {
  const config = loadMcpConfig(process.env, homedir());
  const logger = createLogger({
    name: 'context-guardian-mcp',
    level: config.logLevel,
    destination: process.stderr,
  });
  for (const warning of config.paths.warnings) logger.warn(warning);
  const receipts = new Receipts({ receiptsDir: config.paths.receiptsDir, replica: config.replica });
  const server = createGuardianMcpServer(
    { config, logger, receipts },
    { name: 'context-guardian', version: packageVersion() },
  );
  const transport = new StdioServerTransport();
  await server.connect(transport);
  logger.info({ tools: 7 }, 'context-guardian-mcp serving on stdio');
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
