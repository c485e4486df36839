// An independent verifier of the writers' logs, written only from docs/ARCHIVE_FORMAT.md#verifying-the-log. Like
// independent-verifier.ts it imports node:* modules and nothing else (an ESLint rule holds it to that).
import { createHash, createPublicKey, verify } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';

export interface IndependentLogVerdict {
  log: string;
  status: 'OK' | 'pruned-ok' | 'BREAK';
  /** Span lines naming the log whose entry may still come (its writer live, or not seen from here). */
  waiting?: number;
  kind?: string;
  detail?: string;
  /** The checkpoint that checked out: what the caller keeps as its pin. */
  checkpoint?: string;
  vkey?: string;
}

/** What the caller kept of a log it verified before: the verifier key and the checkpoint, verbatim. */
export interface KeptCheckpoint {
  vkey: string;
  checkpoint: string;
}

class Break extends Error {
  constructor(
    readonly kind: string,
    detail: string,
  ) {
    super(detail);
  }
}

const sha = (...parts: Buffer[]): Buffer => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};

// RFC 6962 §2.1 over a list of leaf hashes: k is the largest power of two below n.
function mth(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return sha();
  if (leaves.length === 1) return leaves[0] as Buffer;
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return sha(Buffer.of(1), mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}

// `<N>` of a tile path: 3-digit groups, all but the last prefixed `x`.
function tileName(n: number): string {
  let d = String(n);
  d = d.padStart(Math.ceil(d.length / 3) * 3, '0');
  const groups = d.match(/\d{3}/g) ?? [];
  return groups.map((g, i) => (i < groups.length - 1 ? `x${g}` : g)).join('/');
}

// A tile of `width` hashes (or entries): `.p/<width>` when partial, else the full tile's prefix.
function readTile(dir: string, level: string, n: number, width: number, entries: boolean): Buffer {
  const base = join(dir, 'tile', level, tileName(n));
  const exact = width === 256 ? base : `${base}.p/${width}`;
  if (existsSync(exact)) return readFileSync(exact);
  if (!existsSync(base)) throw new Break('log-rewritten', `tile ${level}/${n} (${width}) is missing`);
  const full = readFileSync(base);
  if (!entries) return full.subarray(0, width * 32);
  let at = 0;
  for (let i = 0; i < width && at + 2 <= full.length; i += 1) at += 2 + full.readUInt16BE(at);
  return full.subarray(0, at);
}

// The verifier key's name, key ID and Ed25519 key; the base64 key may hold '+' itself: name and ID end at the first two.
function parseKey(vkey: string): { name: string; keyId: number; key: Buffer } {
  const [name, id, ...rest] = vkey.split('+');
  const key = Buffer.from(rest.join('+'), 'base64');
  if (
    name === undefined ||
    name === '' ||
    !/^[0-9a-f]{8}$/.test(id ?? '') ||
    key.length !== 33 ||
    key[0] !== 1
  )
    throw new Break('log-signature', 'the verifier key is malformed');
  const keyId = sha(Buffer.from(`${name}\n`), key).readUInt32BE(0);
  if (keyId !== Number.parseInt(id as string, 16))
    throw new Break('log-signature', 'the key ID does not match');
  return { name, keyId, key };
}

function openCheckpoint(note: string, vkey: string): { origin: string; size: number; root: Buffer } {
  const { name, keyId, key } = parseKey(vkey);
  const publicKey = createPublicKey({
    key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), key.subarray(1)]),
    format: 'der',
    type: 'spki',
  });
  const blank = note.lastIndexOf('\n\n');
  const text = note.slice(0, blank + 1);
  const signed = note
    .slice(blank + 2)
    .split('\n')
    .filter((l) => l !== '')
    .some((line) => {
      const [dash, who, sig] = line.split(' ');
      const raw = Buffer.from(sig ?? '', 'base64');
      return (
        dash === '\u2014' &&
        who === name &&
        raw.length === 68 &&
        raw.readUInt32BE(0) === keyId &&
        verify(null, Buffer.from(text), publicKey, raw.subarray(4))
      );
    });
  if (blank < 0 || !signed) throw new Break('log-signature', 'no signature by the log key verifies');
  const [origin, size, root] = text.split('\n');
  const hash = Buffer.from(root ?? '', 'base64');
  if (origin !== name || !/^\d+$/.test(size ?? '') || hash.length !== 32)
    throw new Break('log-signature', 'the checkpoint body is not origin, size, root');
  return { origin, size: Number(size), root: hash };
}

function entriesOf(dir: string, size: number): string[] {
  const out: string[] = [];
  for (let n = 0; n * 256 < size; n += 1) {
    const width = Math.min(256, size - n * 256);
    const bundle = readTile(dir, 'entries', n, width, true);
    let at = 0;
    while (at < bundle.length) {
      const len = at + 2 <= bundle.length ? bundle.readUInt16BE(at) : Number.POSITIVE_INFINITY;
      if (at + 2 + len > bundle.length) throw new Break('log-rewritten', `entry bundle ${n} is cut`);
      out.push(bundle.subarray(at + 2, at + 2 + len).toString('utf8'));
      at += 2 + len;
    }
    if (out.length !== n * 256 + width)
      throw new Break('log-rewritten', `entry bundle ${n} holds the wrong count`);
  }
  return out;
}

function prunedFiles(runDir: string): Set<string> {
  const out = new Set<string>();
  const chain = join(runDir, 'chain.jsonl');
  if (!existsSync(chain)) return out;
  for (const line of readFileSync(chain, 'utf8').split('\n')) {
    try {
      const l = JSON.parse(line) as { kind?: unknown; files?: unknown };
      if (l.kind === 'prune' && Array.isArray(l.files)) for (const f of l.files) out.add(String(f));
    } catch {
      // a torn or edited line: the chain's own verification names it; it names no pruned file here
    }
  }
  return out;
}

function prunedRuns(spanDir: string): Set<string> {
  const file = join(spanDir, '.tlog', 'pruned.jsonl');
  const out = new Set<string>();
  if (!existsSync(file)) return out;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    try {
      const l = JSON.parse(line) as { run?: unknown };
      if (typeof l.run === 'string') out.add(l.run);
    } catch {
      // a torn last line names no run
    }
  }
  return out;
}

interface Checked {
  verdict: IndependentLogVerdict;
  entries: string[];
}

function verifyOne(spanDir: string, name: string, kept: KeptCheckpoint | undefined): Checked {
  const dir = join(spanDir, '.tlog', name);
  const vkey = existsSync(join(dir, 'vkey')) ? readFileSync(join(dir, 'vkey'), 'utf8').trim() : '';
  if (!existsSync(join(dir, 'checkpoint'))) {
    // Step 2: without a kept checkpoint, a log with no checkpoint yet is empty (its writer logged nothing).
    if (kept !== undefined) throw new Break('log-rewritten', 'no checkpoint');
    if (vkey !== '') parseKey(vkey);
    return { verdict: { log: name, status: 'OK' }, entries: [] };
  }
  const note = readFileSync(join(dir, 'checkpoint'), 'utf8');
  // Step 1: the key pinned before, then the signature.
  if (kept !== undefined && kept.vkey !== vkey) throw new Break('log-signature', 'not the pinned key');
  const cp = openCheckpoint(note, vkey);
  // Step 2: the entries and every hash tile against the root.
  const entries = entriesOf(dir, cp.size);
  const leaves = entries.map((e) => sha(Buffer.of(0), Buffer.from(e)));
  if (!mth(leaves).equals(cp.root)) throw new Break('log-rewritten', 'the entries do not hash to the root');
  for (let level = 0; 256 ** level <= cp.size; level += 1) {
    const per = 256 ** level;
    const count = Math.floor(cp.size / per);
    for (let n = 0; n * 256 < count; n += 1) {
      const width = Math.min(256, count - n * 256);
      const tile = readTile(dir, String(level), n, width, false);
      for (let i = 0; i < width; i += 1) {
        const first = (n * 256 + i) * per;
        if (!tile.subarray(i * 32, i * 32 + 32).equals(mth(leaves.slice(first, first + per))))
          throw new Break('log-rewritten', `tile ${level}/${n} hash ${i}`);
      }
    }
  }
  // Step 3: the kept checkpoint is a prefix of this tree.
  if (kept !== undefined) {
    const old = openCheckpoint(kept.checkpoint, kept.vkey);
    if (old.size > cp.size || !mth(leaves.slice(0, old.size)).equals(old.root))
      throw new Break('log-rolled-back', `not consistent with the kept checkpoint of ${old.size}`);
  }
  // Step 4: every entry against its span file.
  const removed = prunedRuns(spanDir);
  let pruned = 0;
  for (const text of entries) {
    const m = ENTRY.exec(text);
    if (m === null) throw new Break('log-rewritten', 'an entry is not a span entry');
    const [, run, span, hex] = m as unknown as [string, string, string, string];
    const runDir = join(spanDir, run);
    const file = `${span.padStart(4, '0')}.json`;
    if (!existsSync(join(runDir, file))) {
      if (existsSync(runDir) ? prunedFiles(runDir).has(file) : removed.has(run)) {
        pruned += 1;
        continue;
      }
      throw new Break('span-missing', `${run}/${file}`);
    }
    if (
      createHash('sha256')
        .update(readFileSync(join(runDir, file)))
        .digest('hex') !== hex
    )
      throw new Break('span-changed', `${run}/${file}`);
  }
  return {
    verdict: { log: name, status: pruned > 0 ? 'pruned-ok' : 'OK', checkpoint: note, vkey },
    entries,
  };
}

const ENTRY = /^context-guardian span ([A-Za-z0-9_-]{1,80}) (0|[1-9]\d*) sha256:([0-9a-f]{64})$/;

// Canonical JSON (§3) of a chain line: members sorted, values as JSON.stringify writes them (strings, integers,
// booleans and arrays of strings are all a chain line holds).
function canonical(line: Record<string, unknown>): string {
  return `{${Object.keys(line)
    .filter((k) => line[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${JSON.stringify(line[k])}`)
    .join(',')}}`;
}

interface SpanLine {
  run: string;
  span: number;
  log: string | null;
}

// The complete span lines of every run whose hash checks out (§4, §5): a broken line is the chain's to name.
function spanLines(spanDir: string): SpanLine[] {
  const out: SpanLine[] = [];
  for (const run of readdirSync(spanDir).filter((n) => /^[A-Za-z0-9_-]{1,80}$/.test(n))) {
    const chain = join(spanDir, run, 'chain.jsonl');
    if (!existsSync(chain)) continue;
    const text = readFileSync(chain, 'utf8');
    for (const raw of text.slice(0, text.lastIndexOf('\n') + 1).split('\n')) {
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        continue; // an edited line: the chain's verification names it
      }
      const { hash, ...rest } = line;
      if (hash !== sha(Buffer.from(canonical(rest))).toString('hex') || line.kind !== 'span') continue;
      const m = /^(\d{4,})\.json$/.exec(String(line.file));
      if (m === null) continue;
      const log = typeof line.log === 'string' && /^[A-Za-z0-9_-]{1,80}$/.test(line.log) ? line.log : null;
      out.push({ run, span: Number(m[1]), log });
    }
  }
  return out;
}

// The log's writer, from its writer.json: released, dead (this host, its lock refused), live, or unknown.
function writerState(dir: string): Promise<'released' | 'dead' | 'live' | 'unknown'> {
  const file = join(dir, 'writer.json');
  if (!existsSync(file)) return Promise.resolve('unknown');
  let w: { host?: unknown; lock?: unknown; released?: unknown };
  try {
    w = JSON.parse(readFileSync(file, 'utf8')) as typeof w;
  } catch {
    return Promise.resolve('unknown'); // a torn or edited record says nothing
  }
  if (w.released === true) return Promise.resolve('released');
  if (typeof w.lock !== 'string' || w.host !== hostname()) return Promise.resolve('unknown');
  const lock = w.lock;
  return new Promise((resolve) => {
    const socket = connect({ path: `\0${lock}` });
    socket.once('connect', () => {
      socket.destroy();
      resolve('live');
    });
    socket.once('error', (err: NodeJS.ErrnoException) =>
      resolve(err.code === 'ECONNREFUSED' ? 'dead' : 'unknown'),
    );
  });
}

/**
 * Every log under `<span dir>/.tlog/`, and every log a span line names; `kept` holds the caller's pins by log name (a
 * kept log that is not there is log-missing). `withoutLog` counts the span lines written before the log existed.
 */
export async function verifyLogsIndependently(
  spanDir: string,
  kept: Record<string, KeptCheckpoint> = {},
): Promise<{ logs: IndependentLogVerdict[]; withoutLog: number }> {
  const root = join(spanDir, '.tlog');
  const present = (existsSync(root) ? readdirSync(root) : [])
    .filter((n) => /^[A-Za-z0-9_-]{1,80}$/.test(n))
    .filter((n) => ['vkey', 'checkpoint', 'writer.json'].some((f) => existsSync(join(root, n, f))))
    .sort();
  const checked = new Map<string, Checked>();
  for (const name of present) {
    try {
      checked.set(name, verifyOne(spanDir, name, kept[name]));
    } catch (err) {
      if (!(err instanceof Break)) throw err;
      checked.set(name, {
        verdict: { log: name, status: 'BREAK', kind: err.kind, detail: err.message },
        entries: [],
      });
    }
  }
  // Step 0 and step 5: every span line against the log it names.
  const entryIn = new Map<string, string>();
  const newest = new Map<string, number>();
  const runLog = new Map<string, string>();
  for (const [name, c] of checked) {
    for (const text of c.entries) {
      const [, run, span] = ENTRY.exec(text) as unknown as [string, string, string];
      if (!entryIn.has(`${run} ${span}`)) entryIn.set(`${run} ${span}`, name);
      newest.set(`${name} ${run}`, Math.max(newest.get(`${name} ${run}`) ?? 0, Number(span)));
      if (!runLog.has(run)) runLog.set(run, name);
    }
  }
  const missing = new Set<string>();
  let withoutLog = 0;
  for (const line of spanLines(spanDir)) {
    const name = line.log ?? runLog.get(line.run);
    if (name === undefined) {
      if (!entryIn.has(`${line.run} ${line.span}`)) withoutLog += 1;
      continue;
    }
    if (entryIn.get(`${line.run} ${line.span}`) === name) continue;
    const c = checked.get(name);
    if (c === undefined) {
      missing.add(name);
      continue;
    }
    if (c.verdict.status === 'BREAK') continue;
    const older = line.span < (newest.get(`${name} ${line.run}`) ?? 0);
    const gone = older || ['released', 'dead'].includes(await writerState(join(root, name)));
    if (gone)
      c.verdict = { log: name, status: 'BREAK', kind: 'span-unlogged', detail: `${line.run} ${line.span}` };
    else c.verdict.waiting = (c.verdict.waiting ?? 0) + 1;
  }
  for (const name of Object.keys(kept)) if (!checked.has(name)) missing.add(name);
  // A folder with only writer.json is a claim with nothing logged: reported only when a span line makes it matter.
  const shown = (v: IndependentLogVerdict): boolean =>
    existsSync(join(root, v.log, 'vkey')) ||
    existsSync(join(root, v.log, 'checkpoint')) ||
    v.status === 'BREAK' ||
    (v.waiting ?? 0) > 0;
  const logs = [
    ...[...checked.values()].map((c) => c.verdict).filter(shown),
    ...[...missing].map((name) => ({
      log: name,
      status: 'BREAK' as const,
      kind: 'log-missing',
      detail: name,
    })),
  ].sort((a, b) => a.log.localeCompare(b.log));
  return { logs, withoutLog };
}
