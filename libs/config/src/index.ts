export { DEFAULT_PORT, LOG_LEVELS, envSchema } from './env-schema';
export type { GuardianEnv, LogLevel } from './env-schema';
export { parseToolEnv } from './tool-env';
