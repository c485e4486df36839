// An independent verifier written only from docs/ARCHIVE_FORMAT.md. It imports node:* modules and nothing
// else (an ESLint rule restricts this file), so it cannot share a bug with the archive library.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface IndependentVerdict {
  run: string;
  status: 'OK' | 'pruned-ok' | 'BREAK';
  kind?: string;
  detail?: string;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const ZERO = '0'.repeat(64);
const HEX = /^[0-9a-f]{64}$/;
const SPAN = /^\d{4,}\.json$/;
const JOURNAL = /^journal-\d{4,}\.jsonl$/;
const REPAIR_FILE = /^[A-Za-z0-9._-]{1,200}$/;
const QUARANTINED = /^quarantine\/[A-Za-z0-9._-]{1,200}$/;

// §3: JCS restricted to safe non-negative integers; strings escaped as ECMAScript JSON.stringify does.
function escapeString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i += 1) {
    const c = s.charCodeAt(i);
    const ch = s[i] as string;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (c === 8) out += '\\b';
    else if (c === 9) out += '\\t';
    else if (c === 10) out += '\\n';
    else if (c === 12) out += '\\f';
    else if (c === 13) out += '\\r';
    else if (c < 0x20) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

function canonical(v: Json): string {
  if (v === null) return 'null';
  if (v === true) return 'true';
  if (v === false) return 'false';
  if (typeof v === 'number') {
    if (!Number.isInteger(v) || v < 0 || v > Number.MAX_SAFE_INTEGER) throw new Error('number not allowed');
    return v.toString(10);
  }
  if (typeof v === 'string') return escapeString(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${escapeString(k)}:${canonical(v[k] as Json)}`).join(',')}}`;
}

function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function brk(run: string, kind: string, detail: string): IndependentVerdict {
  return { run, status: 'BREAK', kind, detail };
}

function isObj(v: unknown): v is { [k: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// §4: required fields per kind and acceptable file names.
function wellFormed(l: { [k: string]: Json }): boolean {
  const base =
    l.v === 1 &&
    typeof l.seq === 'number' &&
    typeof l.prev === 'string' &&
    HEX.test(l.prev) &&
    typeof l.at === 'string';
  if (!base) return false;
  const sealed = typeof l.sha256 === 'string' && HEX.test(l.sha256) && typeof l.size === 'number';
  if (l.kind === 'span') return typeof l.file === 'string' && SPAN.test(l.file) && sealed;
  if (l.kind === 'journal') return typeof l.file === 'string' && JOURNAL.test(l.file) && sealed;
  if (l.kind === 'prune')
    return Array.isArray(l.files) && l.files.every((f) => typeof f === 'string' && SPAN.test(f));
  if (
    l.kind !== 'repair' ||
    typeof l.file !== 'string' ||
    !REPAIR_FILE.test(l.file) ||
    l.file === '.' ||
    l.file === '..'
  )
    return false;
  if (l.action === 'sealed') return sealed;
  if (l.action === 'quarantined') return sealed && typeof l.to === 'string' && QUARANTINED.test(l.to);
  return l.action === 'truncated';
}

function vouchedFile(l: { [k: string]: Json }): string | null {
  if (l.kind === 'span' || l.kind === 'journal') return l.file as string;
  if (l.kind === 'repair' && l.action === 'sealed') return l.file as string;
  if (l.kind === 'repair' && l.action === 'quarantined') return l.to as string;
  return null;
}

export function verifyRunIndependently(spanDir: string, run: string, anchorDir?: string): IndependentVerdict {
  const dir = join(spanDir, run);
  const names = readdirSync(dir);
  const chainPath = join(dir, 'chain.jsonl');
  const text = existsSync(chainPath) ? readFileSync(chainPath, 'utf8') : '';
  // §5 step 1
  const cut = text.lastIndexOf('\n') + 1;
  const torn = text.slice(cut) !== '';
  const raw = cut === 0 ? [] : text.slice(0, cut - 1).split('\n');
  const parsed: ({ [k: string]: Json } | null)[] = raw.map((r) => {
    try {
      const v: unknown = JSON.parse(r);
      return isObj(v) ? v : null;
    } catch {
      return null; // an unreadable line is reported as entry-edited below
    }
  });
  // §5 step 2
  const pruned = new Set<string>();
  for (const l of parsed)
    if (l !== null && l.kind === 'prune' && Array.isArray(l.files))
      for (const f of l.files) if (typeof f === 'string') pruned.add(f);
  // §5 step 3
  const seqs = new Set<number>();
  const prevs = new Set<string>();
  const vouched = new Set<string>();
  let prevHash = ZERO;
  let prunedCount = 0;
  for (let i = 1; i <= parsed.length; i += 1) {
    const l = parsed[i - 1];
    if (l === null || l === undefined) return brk(run, 'entry-edited', `line ${i} unreadable`);
    const { hash, ...rest } = l;
    let recomputed = '';
    try {
      recomputed = sha256(canonical(rest));
    } catch {
      return brk(run, 'entry-edited', `line ${i} not canonical`);
    }
    if (hash !== recomputed || !wellFormed(l)) return brk(run, 'entry-edited', `line ${i}`);
    const seq = l.seq as number;
    const prev = l.prev as string;
    if (seqs.has(seq) || prevs.has(prev)) return brk(run, 'chain-forked', `line ${i}`);
    if (seq !== i) return brk(run, 'entry-reordered', `line ${i} has seq ${seq}`);
    if (prev !== prevHash) return brk(run, 'entry-edited', `line ${i - 1} rewritten`);
    seqs.add(seq);
    prevs.add(prev);
    prevHash = hash;
    const file = vouchedFile(l);
    if (file === null) continue;
    vouched.add(file);
    const full = join(dir, file);
    if (!existsSync(full)) {
      if (l.kind === 'span' && pruned.has(file)) {
        prunedCount += 1;
        continue;
      }
      return brk(run, 'file-missing', file);
    }
    if (sha256(readFileSync(full)) !== l.sha256) return brk(run, 'content-changed', file);
  }
  // §5 step 4
  const anchorPath = anchorDir === undefined ? '' : join(anchorDir, `${run}.jsonl`);
  if (anchorPath !== '' && existsSync(anchorPath)) {
    const a = readFileSync(anchorPath, 'utf8');
    const complete = a.slice(0, a.lastIndexOf('\n') + 1);
    for (const line of complete.split('\n').filter((x) => x !== '')) {
      let entry: unknown;
      try {
        entry = JSON.parse(line);
      } catch {
        return brk(run, 'anchor-mismatch', 'anchor line unreadable');
      }
      if (!isObj(entry) || typeof entry.seq !== 'number')
        return brk(run, 'anchor-mismatch', 'anchor line malformed');
      const chainLine = parsed[entry.seq - 1];
      if (chainLine === undefined || chainLine === null || chainLine.hash !== entry.head) {
        return brk(run, 'anchor-mismatch', `seq ${entry.seq}`);
      }
    }
  }
  // §5 steps 5-6
  if (torn) return brk(run, 'unsealed-file', 'chain.jsonl partial line');
  for (const name of names.sort()) {
    if (/^\..*\.tmp$/.test(name)) return brk(run, 'unsealed-file', name);
    if ((SPAN.test(name) || JOURNAL.test(name)) && !vouched.has(name)) return brk(run, 'unsealed-file', name);
  }
  return { run, status: prunedCount > 0 ? 'pruned-ok' : 'OK' };
}

export function verifyAllIndependently(spanDir: string, anchorDir?: string): IndependentVerdict[] {
  return readdirSync(spanDir)
    .filter((n) => /^[A-Za-z0-9_-]{1,80}$/.test(n) && statSync(join(spanDir, n)).isDirectory())
    .sort()
    .map((run) => verifyRunIndependently(spanDir, run, anchorDir));
}
