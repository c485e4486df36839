// An independent verifier of the writers' logs, written only from docs/ARCHIVE_FORMAT.md#verifying-the-log. Like
// independent-verifier.ts it imports node:* modules and nothing else (an ESLint rule holds it to that).
import { createHash, createPublicKey, verify } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export interface IndependentLogVerdict {
  log: string;
  status: 'OK' | 'pruned-ok' | 'BREAK';
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

function openCheckpoint(note: string, vkey: string): { origin: string; size: number; root: Buffer } {
  // The base64 key may hold '+' itself: the name and the ID end at the first two.
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

function verifyOne(spanDir: string, name: string, kept: KeptCheckpoint | undefined): IndependentLogVerdict {
  const dir = join(spanDir, '.tlog', name);
  const vkey = existsSync(join(dir, 'vkey')) ? readFileSync(join(dir, 'vkey'), 'utf8').trim() : '';
  if (!existsSync(join(dir, 'checkpoint'))) throw new Break('log-rewritten', 'no checkpoint');
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
  // Steps 4 and 5: every entry against its span file, then no older span file without an entry.
  const removed = prunedRuns(spanDir);
  const logged = new Map<string, Set<number>>();
  let pruned = 0;
  for (const text of entries) {
    const m = /^context-guardian span ([A-Za-z0-9_-]{1,80}) (0|[1-9]\d*) sha256:([0-9a-f]{64})$/.exec(text);
    if (m === null) throw new Break('log-rewritten', 'an entry is not a span entry');
    const [, run, span, hex] = m as unknown as [string, string, string, string];
    logged.set(run, (logged.get(run) ?? new Set()).add(Number(span)));
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
  for (const [run, spans] of logged) {
    if (!existsSync(join(spanDir, run))) continue;
    const newest = Math.max(...spans);
    for (const f of readdirSync(join(spanDir, run))) {
      const m = /^(\d{4,})\.json$/.exec(f);
      if (m !== null && Number(m[1]) < newest && !spans.has(Number(m[1])))
        throw new Break('span-unlogged', `${run}/${f}`);
    }
  }
  return { log: name, status: pruned > 0 ? 'pruned-ok' : 'OK', checkpoint: note, vkey };
}

/** Every log under `<span dir>/.tlog/`; `kept` holds the caller's pins by log name. */
export function verifyLogsIndependently(
  spanDir: string,
  kept: Record<string, KeptCheckpoint> = {},
): IndependentLogVerdict[] {
  const root = join(spanDir, '.tlog');
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((n) => /^[A-Za-z0-9_-]{1,80}$/.test(n))
    .filter((n) => existsSync(join(root, n, 'vkey')) || existsSync(join(root, n, 'checkpoint')))
    .sort()
    .map((name) => {
      try {
        return verifyOne(spanDir, name, kept[name]);
      } catch (err) {
        if (!(err instanceof Break)) throw err;
        return { log: name, status: 'BREAK', kind: err.kind, detail: err.message };
      }
    });
}
