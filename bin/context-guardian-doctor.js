#!/usr/bin/env node
'use strict';
// Checks the install and a running sidecar, with a fix for anything wrong; see the README.
const { main } = require('./built.cjs')('context-guardian-doctor', 'apps/cli/src/doctor/main.js');

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
