import type { Logger } from 'pino';

/**
 * The pino logger, injectable by type (HOUSE rule 5: tokens are classes). The module provides the instance made
 * by @guardian/telemetry's createLogger; the interface merge gives this token pino's methods without a wrapper
 * on every log call.
 */
// The merge is the point: a class token for Nest, pino's type for callers. Nothing implements the class itself.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export abstract class GuardianLogger {}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface GuardianLogger extends Logger {}
