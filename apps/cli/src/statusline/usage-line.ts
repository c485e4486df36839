import type { Usage } from './usage-client';

/** What every failure prints (seed: "Any failure ... prints ctx ?"). */
export const UNKNOWN_LINE = 'ctx ?';

/** `ctx 40% (12.9k/32k) est`; `exact` when the upstream counted the tokens itself (count_source tokenize). */
export function usageLine(usage: Usage): string {
  const accuracy = usage.count_source === 'tokenize' ? 'exact' : 'est';
  const used = compact(usage.used_after_compaction);
  return `ctx ${Math.round(usage.pct)}% (${used}/${compact(usage.window)}) ${accuracy}`;
}

// 950 -> "950", 12900 -> "12.9k", 32000 -> "32k", 1048576 -> "1M": one decimal at most, no trailing ".0".
export function compact(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 999_950) return `${trim((n / 1000).toFixed(1))}k`;
  return `${trim((n / 1_000_000).toFixed(1))}M`;
}

function trim(fixed: string): string {
  return fixed.endsWith('.0') ? fixed.slice(0, -2) : fixed;
}
