#!/usr/bin/env node
'use strict';
// The stdio MCP server (README, "MCP server"): stdout is the protocol, logs go to stderr.
const { main } = require('./built.cjs')('context-guardian-mcp', 'apps/mcp/src/main.js');

main().catch((err) => {
  const code = err && typeof err.code === 'string' ? err.code : 'MCP_START_FAILED';
  process.stderr.write(`context-guardian-mcp: ${code}: ${err && err.message ? err.message : String(err)}\n`);
  process.exitCode = 2;
});
