import { spanFileName } from './archive-paths';
import { spanKey, type SpanLine } from './log-leftovers';
import { listPins } from './log-pins';
import { markBroken, type ExaminedLog, type LogVerdict } from './log-verdict';
import { parseSpanEntry } from './span-log-read';

/** A log that is not on the volume: named by span lines, or pinned by this verifier. */
function missingVerdict(name: string, origin: string | null, detail: string): LogVerdict {
  return {
    log: name,
    origin,
    size: 0,
    status: 'break',
    checked: 'spans',
    pruned: 0,
    since: null,
    pinned: false,
    break: { kind: 'log-missing', entry: null, detail },
    waiting: 0,
    writer: null,
  };
}

/** Why a span line without its entry is a break, by what is known of the log's writer; null when it may wait. */
function unloggedWhy(ex: ExaminedLog, olderThanNewest: boolean): string | null {
  if (olderThanNewest)
    return "it is older than its run's newest entry, and entries follow commits in span order";
  if (ex.verdict.writer === 'released') return 'the writer stopped with every entry in its checkpoint';
  if (ex.verdict.writer === 'dead')
    return 'its writer died before its checkpoint (the next writer started on its host logs it)';
  return null;
}

/**
 * Every span line against the log it names (docs/ARCHIVE_FORMAT.md#verifying-the-log, check 5): its entry must be
 * there, unless its writer may still be writing it (span-unlogged otherwise); a log named and not on the volume is
 * log-missing. A line that names no log is checked against the log holding its run's entries; when none does, it was
 * written before the log existed, and is counted.
 */
export function checkCoverage(
  lines: readonly SpanLine[],
  examined: ReadonlyMap<string, ExaminedLog>,
): { missing: LogVerdict[]; withoutLog: { spans: number; runs: number } } {
  const entryLog = new Map<string, string>();
  /** `<log> <run>`: the run's newest span with an entry in that log. */
  const newest = new Map<string, number>();
  const runLog = new Map<string, string>();
  for (const [name, ex] of examined) {
    for (const text of ex.entries ?? []) {
      const e = parseSpanEntry(text);
      if (e === null) continue;
      if (!entryLog.has(spanKey(e.run, e.span))) entryLog.set(spanKey(e.run, e.span), name);
      newest.set(`${name} ${e.run}`, Math.max(newest.get(`${name} ${e.run}`) ?? 0, e.span));
      if (!runLog.has(e.run)) runLog.set(e.run, name);
    }
  }
  const named = new Map<string, number>();
  const runsWithout = new Set<string>();
  let spansWithout = 0;
  for (const line of lines) {
    const key = spanKey(line.run, line.span);
    const file = `${line.run}/${spanFileName(line.span)}`;
    // An older line (no `log` member) belongs to the log holding its run's entries, if any does.
    const name = line.log ?? runLog.get(line.run);
    if (name === undefined) {
      if (!entryLog.has(key)) {
        spansWithout += 1;
        runsWithout.add(line.run);
      }
      continue;
    }
    if (entryLog.get(key) === name) continue;
    const ex = examined.get(name);
    if (ex === undefined) {
      named.set(name, (named.get(name) ?? 0) + 1);
      continue;
    }
    const why = unloggedWhy(ex, line.span < (newest.get(`${name} ${line.run}`) ?? 0));
    if (why === null) ex.verdict.waiting += 1;
    else
      markBroken(ex.verdict, { kind: 'span-unlogged', entry: null, detail: `${file} has no entry: ${why}` });
  }
  const missing = [...named].map(([name, n]) =>
    missingVerdict(name, null, `${n} span line(s) name this log, and .tlog/${name} is not on the volume`),
  );
  return { missing, withoutLog: { spans: spansWithout, runs: runsWithout.size } };
}

/** The base64 key of a verifier key (`<name>+<id>+<key>`; the key may hold `+`). */
function publicKeyOf(vkey: string): string {
  return vkey.split('+').slice(2).join('+');
}

/**
 * Pins kept for this volume whose log is gone (issue 29 audit: a pinned log deleted with its runs passed). A pin is
 * this volume's when its key is the key of a log still there: every writer of a volume signs with the volume's key.
 * `present`: each log there, with the origin and verifier key it shows (on the volume, or as a sidecar lists it).
 */
export async function pinnedLogsGone(
  verifiedDir: string,
  present: readonly { origin: string | null; vkey: string | null }[],
): Promise<LogVerdict[]> {
  const keys = new Set(present.flatMap((l) => (l.vkey === null ? [] : [publicKeyOf(l.vkey)])));
  const origins = new Set(present.flatMap((l) => (l.origin === null ? [] : [l.origin])));
  const out: LogVerdict[] = [];
  for (const pin of await listPins(verifiedDir)) {
    if (origins.has(pin.origin) || !keys.has(publicKeyOf(pin.vkey))) continue;
    const size = pin.checkpoint.split('\n')[1] ?? '?';
    out.push(
      missingVerdict(
        pin.origin.split('/').pop() ?? pin.origin,
        pin.origin,
        `verified at ${size} entries on ${pin.verified_at}, and no log on the volume has its origin any more`,
      ),
    );
  }
  return out;
}

/** The same for a volume's logs as verifyLogs examined them; a log already named missing is not named twice. */
export async function pinnedButGone(
  verifiedDir: string,
  examined: ReadonlyMap<string, ExaminedLog>,
  already: readonly LogVerdict[],
): Promise<LogVerdict[]> {
  const present = [...examined.values()].map((ex) => ({ origin: ex.verdict.origin, vkey: ex.vkey }));
  return (await pinnedLogsGone(verifiedDir, present)).filter((v) => !already.some((a) => a.log === v.log));
}
