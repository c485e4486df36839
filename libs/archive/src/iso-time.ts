/** The last whole second `isoTimestamp` wrote out, and its text up to the milliseconds ("2026-12-07T21:56:00."). */
let second = Number.NaN;
let secondText = '';

/**
 * `at.toISOString()`, worked out once a second: V8's toISOString costs about 0.4 us, and the usage log and the
 * session's usage record each stamp every answered request. Within one second only the milliseconds change. An
 * invalid date throws as toISOString does (NaN is no second seen before).
 */
export function isoTimestamp(at: Date): string {
  const ms = at.getTime();
  const s = Math.floor(ms / 1000);
  if (s !== second) {
    const iso = at.toISOString();
    second = s;
    secondText = iso.slice(0, -4);
    return iso;
  }
  const rest = ms - s * 1000;
  return `${secondText}${rest < 10 ? '00' : rest < 100 ? '0' : ''}${rest}Z`;
}
