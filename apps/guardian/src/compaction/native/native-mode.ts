import type { GuardianConfig } from '../../config/guardian-config';

/** Hosts that serve the compaction protocols themselves (issue 27 item 4): `auto` forwards to them unchanged. */
const NATIVE_HOSTS = [/^api\.openai\.com$/, /\.openai\.azure\.com$/, /^api\.anthropic\.com$/];

/**
 * Whether guardian serves the compaction protocols or forwards them (ARCHITECTURE.md#native-compaction):
 * GUARDIAN_NATIVE_COMPACTION, and for `auto` the upstream's host.
 */
export function nativeMode(config: GuardianConfig): 'emulate' | 'passthrough' {
  const mode = config.native.mode;
  if (mode !== 'auto') return mode;
  const host = config.upstream.base.hostname.toLowerCase();
  return NATIVE_HOSTS.some((h) => h.test(host)) ? 'passthrough' : 'emulate';
}
