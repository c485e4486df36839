// The deploy checks: rendered Helm objects against the Kubernetes schemas, the compose files, the
// Dockerfile. Run by test/deploy/check-deploy.sh (npm run check:deploy), which builds helm first; the
// root jest config leaves this folder out because it needs that binary.
/** @type {import('jest').Config} */
module.exports = {
  rootDir: '../..',
  testEnvironment: 'node',
  roots: ['<rootDir>/test/deploy'],
  testMatch: ['**/*.spec.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest'] },
  // A hang guard, not a verdict (as the root config): a busy machine renders charts slowly, never wrongly.
  testTimeout: 15 * 60_000,
  maxWorkers: 2,
};
