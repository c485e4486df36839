import { GuardianClient, GuardianClientError, type StatsAnswer } from '@guardian/client';

import { fail, note, ok, skip, type CheckResult } from './doctor-check';

/** Where the doctor looks, and how long it waits for each answer. */
export interface SidecarTarget {
  url: string;
  token?: string;
  timeoutMs: number;
}

/** The checks that need the running sidecar: /readyz, /guardian/stats and the upstream status it reports. */
export async function checkSidecar(target: SidecarTarget): Promise<CheckResult[]> {
  let client: GuardianClient;
  try {
    client = new GuardianClient(target);
  } catch (err: unknown) {
    if (!(err instanceof GuardianClientError)) throw err;
    return [
      fail('sidecar', `${err.code}: ${err.message}`, 'set --url / GUARDIAN_URL to http(s)://host:port'),
      skip('stats', 'needs the sidecar'),
      skip('upstream', 'needs the sidecar'),
    ];
  }
  const ready = await checkReady(client, target.url);
  if (ready.status === 'fail') {
    return [ready, skip('stats', 'needs the sidecar'), skip('upstream', 'needs the sidecar')];
  }
  return [ready, ...(await checkStats(client))];
}

async function checkReady(client: GuardianClient, base: string): Promise<CheckResult> {
  const url = client.url('readyz').href;
  const start = 'start the sidecar (context-guardian), or point --url / GUARDIAN_URL at the one running';
  let reply;
  try {
    reply = await client.ready();
  } catch (err: unknown) {
    if (err instanceof GuardianClientError)
      return fail('sidecar', `no answer at ${url} (${err.code}: ${err.message})`, start);
    throw err;
  }
  const body = reply.body ?? {};
  if (reply.status !== 200 || body.status !== 'ready') {
    return fail(
      'sidecar',
      `${url} answered ${reply.status}, not ready`,
      `${start}; its log says why it is not ready`,
    );
  }
  const volume = body.span_volume ?? 'unknown';
  const redis = body.redis;
  const detail = `ready at ${base} (version ${body.version ?? '?'}; span volume ${volume}; memo ${body.memo_store ?? '?'}${redis !== undefined && redis !== 'not configured' ? `, redis ${redis}` : ''})`;
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

async function checkStats(client: GuardianClient): Promise<CheckResult[]> {
  let stats: StatsAnswer;
  try {
    stats = await client.stats();
  } catch (err: unknown) {
    if (!(err instanceof GuardianClientError)) throw err;
    if (err.status === 401 || err.status === 403) {
      return [
        fail(
          'stats',
          `/guardian/stats answered ${err.status}`,
          'set GUARDIAN_TOKEN to an admin or developer token (sent as X-Guardian-Token)',
        ),
        skip('upstream', 'needs /guardian/stats'),
      ];
    }
    return [
      fail(
        'stats',
        err.status === undefined
          ? `no answer from /guardian/stats (${err.code}: ${err.message})`
          : `/guardian/stats answered ${err.status}`,
        'see the sidecar log',
      ),
      skip('upstream', 'needs /guardian/stats'),
    ];
  }
  return [statsLine(stats), upstreamLine(stats)];
}

function statsLine(stats: Partial<StatsAnswer>): CheckResult {
  const window =
    typeof stats.num_ctx === 'number'
      ? `window ${stats.num_ctx} (${stats.window_source ?? '?'})`
      : `window ${stats.window_source ?? 'not known yet'}`;
  const failOpen = Object.entries(stats.fail_open ?? {}).filter(
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

function upstreamLine(stats: Partial<StatsAnswer>): CheckResult {
  const upstream = stats.upstream ?? '?';
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
