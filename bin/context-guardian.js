#!/usr/bin/env node
// The sidecar. Configuration comes from GUARDIAN_* environment variables (README, "Configuration").
require('./built.cjs')('context-guardian', 'apps/guardian/src/main.js');
