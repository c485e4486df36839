#!/usr/bin/env node
'use strict';
// Runs the compiled recall CLI (npm run build puts it under dist/ with the source layout).
const { main } = require('./built.cjs')('context-guardian-recall', 'apps/cli/src/recall/main.js');

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
