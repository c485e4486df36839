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
  testTimeout: 60000,
  maxWorkers: 2,
};
