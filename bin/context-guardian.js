#!/usr/bin/env node
// The sidecar. Configuration comes from GUARDIAN_* environment variables (README, "Configuration").
require('../dist/apps/guardian/src/main.js');
