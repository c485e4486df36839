/** Where a tool finds the sidecar, the token it sends, and whether it reads the archive through it. */
export interface SidecarTarget {
  url: string;
  token: string | undefined;
  /**
   * Team mode (ARCHITECTURE.md#access): read the archive through the sidecar's API instead of a local span folder. On when a
   * `--url` is given, or when GUARDIAN_URL and GUARDIAN_TOKEN are both set; GUARDIAN_URL alone still only says where
   * the status line and the doctor look for a sidecar running beside a local archive.
   */
  remote: boolean;
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

/**
 * The one rule every tool applies (the status line, the doctor, the recall CLI, the MCP server, the Claude Code
 * hooks): `--url`, else GUARDIAN_URL, else `http://127.0.0.1:$GUARDIAN_PORT` (8786); the token from GUARDIAN_TOKEN.
 */
export function sidecarTarget(env: Record<string, string | undefined>, flagUrl?: string): SidecarTarget {
  const envUrl = nonEmpty(env.GUARDIAN_URL);
  const token = nonEmpty(env.GUARDIAN_TOKEN);
  const url = nonEmpty(flagUrl) ?? envUrl ?? `http://127.0.0.1:${nonEmpty(env.GUARDIAN_PORT) ?? '8786'}`;
  return {
    url,
    token,
    remote: nonEmpty(flagUrl) !== undefined || (envUrl !== undefined && token !== undefined),
  };
}
