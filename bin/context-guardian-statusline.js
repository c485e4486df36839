#!/usr/bin/env node
'use strict';
// Prints one line from the sidecar's /guardian/usage for a client's status bar; see the README.
const { main } = require('./built.cjs')('context-guardian-statusline', 'apps/cli/src/statusline/main.js');

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
