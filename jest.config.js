// One jest run covers unit (*.spec.ts), integration (*.int-spec.ts) and end-to-end (*.e2e-spec.ts) tests.
// Libraries resolve through the same @guardian/* names the TypeScript paths use.
// The deploy checks (test/deploy) need a helm binary and run under `npm run check:deploy` instead.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/apps', '<rootDir>/libs', '<rootDir>/test', '<rootDir>/bench'],
  testMatch: ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.e2e-spec.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/', '<rootDir>/test/deploy/'],
  transform: { '^.+\\.ts$': ['@swc/jest'] },
  moduleNameMapper: { '^@guardian/(.*)$': '<rootDir>/libs/$1/src/index.ts' },
  // A hang guard, not a verdict: a test's pass or fail must not depend on the machine's speed (`npm test` has taken
  // 32 minutes on a busy 2-core machine). Tests wait for events; this only ends one that never comes.
  testTimeout: 15 * 60_000,
  maxWorkers: 2,
};
