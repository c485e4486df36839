#!/usr/bin/env node
'use strict';
// Runs the compiled Claude Code adapter (hooks: capture, resume; install, uninstall, status); see the README.
const { main } = require('./built.cjs')('context-guardian-claude-code', 'apps/cli/src/claude-code/main.js');

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
