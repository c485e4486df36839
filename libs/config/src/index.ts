export { DEFAULT_PORT, envSchema, type GuardianEnv, type LogLevel } from './env-schema';
export { parseToolEnv } from './tool-env';
