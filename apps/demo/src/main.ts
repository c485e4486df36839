import { DEMO_SETTINGS, runDemo } from './demo';

/** `npm run demo`: prints the table, the settings used, and where the archive was left for `context-guardian-recall`. */
async function main(): Promise<void> {
  const report = await runDemo();
  process.stdout.write(`${report.lines.join('\n')}\n\n`);
  const settings = Object.entries(DEMO_SETTINGS)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  process.stdout.write(`settings: ${settings}, window detected from the stub's /v1/models\n`);
  process.stdout.write(
    `archive kept in ${report.dataDir}; try:\n  GUARDIAN_DATA_DIR=${report.dataDir} node bin/context-guardian-recall.js --verify --all\n  GUARDIAN_DATA_DIR=${report.dataDir} node bin/context-guardian-recall.js FACT-ROLLBACK-7731\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`demo failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
