// The one place the status line reads the environment (HOUSE rule 2). Names and defaults: ARCHITECTURE.md#access,
// ARCHITECTURE.md#configuration. The status line runs on every Claude Code event, so it loads no zod, hence not
// libs/config: the default port is repeated here, and config.spec.ts holds it to libs/config's.

/** Where the status line looks for the sidecar, and the token it sends, before any flag overrides them. */
export interface StatuslineDefaults {
  url: string;
  token: string | undefined;
}

/** Reads GUARDIAN_URL (else http://127.0.0.1:$GUARDIAN_PORT, port 8786) and GUARDIAN_TOKEN. */
export function statuslineDefaults(env: NodeJS.ProcessEnv = process.env): StatuslineDefaults {
  const url = nonEmpty(env.GUARDIAN_URL) ?? `http://127.0.0.1:${nonEmpty(env.GUARDIAN_PORT) ?? '8786'}`;
  return { url, token: nonEmpty(env.GUARDIAN_TOKEN) };
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}
