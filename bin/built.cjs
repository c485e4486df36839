'use strict';
// Loads a compiled entry point from dist/. A clone that was never built, or an install whose dist/ went away, says
// so on stderr and exits 1 instead of printing a stack trace: Claude Code shows a hook's non-zero exit and its stderr
// to the user (exit 2 would block compaction), so a hook that cannot run is seen (issue 30 item 10).
const path = require('node:path');

const root = path.resolve(__dirname, '..');

module.exports = function built(tool, entry) {
  const file = path.join(root, 'dist', entry);
  try {
    return require(file);
  } catch (err) {
    const missing = err && err.code === 'MODULE_NOT_FOUND' && String(err.message).includes(file);
    if (!missing) throw err;
    process.stderr.write(
      `${tool}: cannot run: ${file} is missing; build this install first (cd ${root} && npm ci && npm run build)\n`,
    );
    process.exit(1);
  }
};
