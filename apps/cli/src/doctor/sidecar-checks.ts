import { fail, note, ok, skip, type CheckResult } from './doctor-check';
import { SidecarError, getJson, sidecarUrl, type SidecarTarget } from './sidecar-client';

type Json = Record<string, unknown>;

function asObject(value: unknown): Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The checks that need the running sidecar: /readyz, /guardian/stats and the upstream status it reports. */
export async function checkSidecar(target: SidecarTarget): Promise<CheckResult[]> {
  const ready = await checkReady(target);
  if (ready.status === 'fail') {
    return [ready, skip('stats', 'needs the sidecar'), skip('upstream', 'needs the sidecar')];
  }
  return [ready, ...(await checkStats(target))];
}

async function checkReady(target: SidecarTarget): Promise<CheckResult> {
  const url = sidecarUrl(target.url, 'readyz').href;
  const start = 'start the sidecar (context-guardian), or point --url / GUARDIAN_URL at the one running';
  let reply;
  try {
    reply = await getJson(target, 'readyz');
  } catch (err: unknown) {
    if (err instanceof SidecarError)
      return fail('sidecar', `no answer at ${url} (${err.code}: ${err.message})`, start);
    throw err;
  }
  const body = asObject(reply.body);
  if (reply.status !== 200 || body.status !== 'ready') {
    return fail(
      'sidecar',
      `${url} answered ${reply.status}, not ready`,
      `${start}; its log says why it is not ready`,
    );
  }
  const volume = str(body.span_volume) ?? 'unknown';
  const redis = str(body.redis);
  const detail = `ready at ${target.url} (version ${str(body.version) ?? '?'}; span volume ${volume}; memo ${str(body.memo_store) ?? '?'}${redis !== undefined && redis !== 'not configured' ? `, redis ${redis}` : ''})`;
  if (volume !== 'writable') {
    // The sidecar fails open and defers spans (ARCHITECTURE.md#fail-open rule 3); the archive still misses them until
    // fixed.
    return fail(
      'sidecar',
      detail,
      "make the sidecar's span volume (GUARDIAN_SPAN_DIR) writable; spans are deferred meanwhile",
    );
  }
  if (redis !== undefined && redis !== 'not configured' && redis !== 'ready') {
    return fail(
      'sidecar',
      detail,
      'check GUARDIAN_REDIS_URL is reachable from the sidecar; summaries are memoised per replica meanwhile',
    );
  }
  return ok('sidecar', detail);
}

async function checkStats(target: SidecarTarget): Promise<CheckResult[]> {
  let reply;
  try {
    reply = await getJson(target, 'guardian/stats');
  } catch (err: unknown) {
    if (err instanceof SidecarError) {
      return [
        fail('stats', `no answer from /guardian/stats (${err.code}: ${err.message})`, 'see the sidecar log'),
        skip('upstream', 'needs /guardian/stats'),
      ];
    }
    throw err;
  }
  if (reply.status === 401 || reply.status === 403) {
    return [
      fail(
        'stats',
        `/guardian/stats answered ${reply.status}`,
        'set GUARDIAN_TOKEN to an admin or developer token (sent as X-Guardian-Token)',
      ),
      skip('upstream', 'needs /guardian/stats'),
    ];
  }
  if (reply.status !== 200) {
    return [
      fail('stats', `/guardian/stats answered ${reply.status}`, 'see the sidecar log'),
      skip('upstream', 'needs /guardian/stats'),
    ];
  }
  const stats = asObject(reply.body);
  return [statsLine(stats), upstreamLine(stats)];
}

function statsLine(stats: Json): CheckResult {
  const window =
    typeof stats.num_ctx === 'number'
      ? `window ${stats.num_ctx} (${str(stats.window_source) ?? '?'})`
      : `window ${str(stats.window_source) ?? 'not known yet'}`;
  const failOpen = Object.entries(asObject(stats.fail_open)).filter(
    (e): e is [string, number] => typeof e[1] === 'number' && e[1] > 0,
  );
  const total = failOpen.reduce((sum, [, n]) => sum + n, 0);
  const stages = failOpen.length > 0 ? ` (${failOpen.map(([stage, n]) => `${stage} ${n}`).join(', ')})` : '';
  const compactions = typeof stats.compactions_performed === 'number' ? stats.compactions_performed : 0;
  const dry = stats.dry_run === true ? '; DRY RUN' : '';
  const detail = `${window}; compactions ${compactions}; fail-open ${total}${stages}${dry}`;
  if (stats.seal_status === 'broken') {
    return fail(
      'stats',
      `${detail}; seal broken`,
      'context-guardian-recall --verify names the run and the break',
    );
  }
  return ok('stats', detail);
}

function upstreamLine(stats: Json): CheckResult {
  const upstream = str(stats.upstream) ?? '?';
  switch (stats.upstream_status) {
    case 'ok':
      return ok('upstream', `${upstream} answered the last request`);
    case 'down':
      return fail(
        'upstream',
        `${upstream} failed the last request`,
        `check GUARDIAN_UPSTREAM_URL (${upstream}) is up and reachable from the sidecar`,
      );
    default:
      return note(
        'upstream',
        `${upstream}: not contacted yet (no request forwarded since the sidecar started)`,
      );
  }
}
