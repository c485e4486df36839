// The one place the status line reads the environment (HOUSE rule 2). Names and defaults: ARCHITECTURE.md#access,
// ARCHITECTURE.md#configuration.
import { sidecarTarget } from '@guardian/client';

/** Where the status line looks for the sidecar, and the token it sends, before any flag overrides them. */
export interface StatuslineDefaults {
  url: string;
  token: string | undefined;
}

/** Reads GUARDIAN_URL (else http://127.0.0.1:$GUARDIAN_PORT, port 8786) and GUARDIAN_TOKEN (libs/client). */
export function statuslineDefaults(env: NodeJS.ProcessEnv = process.env): StatuslineDefaults {
  const { url, token } = sidecarTarget(env);
  return { url, token };
}
