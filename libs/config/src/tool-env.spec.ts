import { ZodError } from 'zod';

import { envSchema } from './env-schema';
import { parseToolEnv } from './tool-env';

describe('parseToolEnv', () => {
  it("gives a tool the sidecar's own defaults for what is unset or blank", () => {
    const sidecar = envSchema.parse({});
    const tool = parseToolEnv({ GUARDIAN_KEEP_SPANS: '  ' }, [
      'GUARDIAN_KEEP_SPANS',
      'GUARDIAN_RETENTION_DAYS',
      'GUARDIAN_CHARS_PER_TOKEN',
      'GUARDIAN_PORT',
      'GUARDIAN_LOG_LEVEL',
    ]);
    expect(tool).toEqual({
      GUARDIAN_KEEP_SPANS: sidecar.GUARDIAN_KEEP_SPANS,
      GUARDIAN_RETENTION_DAYS: sidecar.GUARDIAN_RETENTION_DAYS,
      GUARDIAN_CHARS_PER_TOKEN: sidecar.GUARDIAN_CHARS_PER_TOKEN,
      GUARDIAN_PORT: sidecar.GUARDIAN_PORT,
      GUARDIAN_LOG_LEVEL: sidecar.GUARDIAN_LOG_LEVEL,
    });
  });

  it('reads the given values by the same rules, and names a bad one', () => {
    expect(parseToolEnv({ GUARDIAN_KEEP_SPANS: '7', GUARDIAN_OTHER: 'x' }, ['GUARDIAN_KEEP_SPANS'])).toEqual({
      GUARDIAN_KEEP_SPANS: 7,
    });
    let thrown: unknown;
    try {
      parseToolEnv({ GUARDIAN_RETENTION_DAYS: '1.5' }, ['GUARDIAN_RETENTION_DAYS']);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ZodError);
    expect((thrown as ZodError).issues[0]?.path).toEqual(['GUARDIAN_RETENTION_DAYS']);
  });
});
