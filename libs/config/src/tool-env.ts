import { envSchema, type GuardianEnv } from './env-schema';

/**
 * The variables a tool (a CLI, the MCP server) shares with the sidecar, parsed by the sidecar's own rules and
 * defaults. A blank value is unset (a hook's environment often carries `VAR=`), so it takes the default. Throws a
 * ZodError naming the variable.
 */
export function parseToolEnv<K extends keyof GuardianEnv>(
  env: Record<string, string | undefined>,
  keys: readonly K[],
): Pick<GuardianEnv, K> {
  // Only the named variables are given, so every other one takes its (valid) default and an error names a given one.
  const all = envSchema.parse(Object.fromEntries(keys.map((k) => [k, nonBlank(env[k])])));
  // zod cannot type a pick by a generic key list; these are exactly the keys K of a parsed GuardianEnv.
  return Object.fromEntries(keys.map((k) => [k, all[k]])) as Pick<GuardianEnv, K>;
}

function nonBlank(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}
