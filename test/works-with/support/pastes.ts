/**
 * Pasted text for the long works-with sessions: each turn pastes about 17 KB of a different kind of text a developer
 * pastes into a coding agent (logs, source files, CI output), made up deterministically so that a run is repeatable
 * and no real data is involved. Each paste is tagged `cg-paste-NN` at its head and its end, so a runner can find it
 * in a forwarded request and tell whether it arrived whole or spilled (a spill keeps a head and a tail).
 */

/** Size of one paste, in characters (issue 11: "10 turns that each paste ~17 KB"). */
export const PASTE_CHARS = 17_000;

/** The sentence the first turn plants; the runner checks for `FACT_TOKEN` in every compacted request. */
export const FACT_SENTENCE = 'Remember this: the deploy key is ZEBRA-7431.';
export const FACT_TOKEN = 'ZEBRA-7431';

export const pasteTag = (turn: number): string => `cg-paste-${String(turn).padStart(2, '0')}`;
export const pasteEnd = (turn: number): string => `(end of ${pasteTag(turn)})`;

type Rng = () => number;

/** mulberry32: a tiny seeded generator, so every run pastes the same text. */
function rng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(r: Rng, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
const int = (r: Rng, lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));
const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
const hex = (r: Rng, n: number): string =>
  Array.from({ length: n }, () => '0123456789abcdef'[Math.floor(r() * 16)]).join('');

const NOUNS = [
  'invoice',
  'ledger',
  'tenant',
  'order',
  'payment',
  'cursor',
  'export',
  'webhook',
  'refund',
  'quota',
];
const VERBS = ['load', 'apply', 'settle', 'retry', 'flush', 'verify', 'render', 'resolve', 'sync', 'prune'];
const cap = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

interface PasteKind {
  /** What the prompt calls it. */
  what: string;
  /** Line `i` of the paste. */
  line(r: Rng, i: number): string;
}

const KINDS: readonly PasteKind[] = [
  {
    what: 'the nginx access log from the API gateway',
    line: (r, i) =>
      `10.42.${int(r, 0, 9)}.${int(r, 2, 254)} - - [12/Nov/2026:09:${pad(Math.floor(i / 60) % 60)}:${pad(i % 60)} +0000] ` +
      `"${pick(r, ['GET', 'GET', 'POST', 'PUT'])} /api/v2/${pick(r, NOUNS)}s/${int(r, 1000, 99999)}${pick(r, ['', '?expand=items', '?page=2'])} HTTP/1.1" ` +
      `${pick(r, [200, 200, 200, 201, 304, 404, 502])} ${int(r, 120, 48000)} "-" "${pick(r, ['okhttp/4.12.0', 'Mozilla/5.0 (X11; Linux x86_64)', 'python-requests/2.32.3'])}" rt=${(r() * 2).toFixed(3)}`,
  },
  {
    what: 'src/billing/invoice.service.ts, the file I am changing',
    line: (r, i) => {
      const n = pick(r, NOUNS);
      const v = pick(r, VERBS);
      const k = i % 8;
      if (k === 0) return `\n  /** ${cap(v)}s the ${n} for one tenant; idempotent per ${n} id. */`;
      if (k === 1)
        return `  async ${v}${cap(n)}${i}(tenantId: string, ${n}Id: string): Promise<${cap(n)}Result> {`;
      if (k === 2)
        return `    const ${n} = await this.${n}Repo.findOne({ where: { tenantId, id: ${n}Id } });`;
      if (k === 3)
        return `    if (!${n}) throw new NotFoundException(\`${n} \${${n}Id} not found for \${tenantId}\`);`;
      if (k === 4)
        return `    const total = ${n}.lines.reduce((sum, l) => sum + l.amountCents * l.quantity, 0);`;
      if (k === 5) return `    this.logger.debug({ tenantId, ${n}Id, total }, '${v} ${n}');`;
      if (k === 6)
        return `    return { id: ${n}.id, totalCents: total, status: '${pick(r, ['open', 'settled', 'void'])}' };`;
      return '  }';
    },
  },
  {
    what: 'the Spring Boot log from the ledger service, with the stack trace',
    line: (r, i) =>
      i % 9 === 8
        ? `\tat com.acme.ledger.${cap(pick(r, NOUNS))}Service.${pick(r, VERBS)}(${cap(pick(r, NOUNS))}Service.java:${int(r, 40, 900)})`
        : `2026-11-12 09:${pad(Math.floor(i / 30) % 60)}:${pad((i * 2) % 60)}.${pad(int(r, 0, 999), 3)} ${pick(r, ['INFO', 'INFO', 'WARN', 'ERROR'])} ` +
          `${int(r, 1, 9)} --- [nio-8080-exec-${int(r, 1, 20)}] c.a.l.${pick(r, NOUNS)}.${cap(pick(r, VERBS))}Handler : ` +
          `${pick(r, VERBS)} ${pick(r, NOUNS)} id=${int(r, 10000, 99999)} took ${int(r, 1, 4000)}ms`,
  },
  {
    what: 'etl/transform.py from the nightly export job',
    line: (r, i) => {
      const n = pick(r, NOUNS);
      const k = i % 7;
      if (k === 0)
        return `\n\ndef ${pick(r, VERBS)}_${n}_rows_${i}(rows: list[dict], *, tenant: str) -> list[dict]:`;
      if (k === 1)
        return `    """${cap(pick(r, VERBS))} the ${n} rows of one tenant before they are written to parquet."""`;
      if (k === 2) return `    out = []`;
      if (k === 3) return `    for row in rows:`;
      if (k === 4) return `        if row.get("${n}_id") is None or row["tenant"] != tenant:`;
      if (k === 5) return `            log.warning("skip %s row %s", "${n}", row.get("id"))`;
      return `        out.append({**row, "amount": Decimal(row["amount"]).quantize(Decimal("0.01"))})\n    return out`;
    },
  },
  {
    what: 'journalctl output from the build host',
    line: (r, i) =>
      `Nov 12 10:${pad(Math.floor(i / 40) % 60)}:${pad(i % 60)} build-0${int(r, 1, 4)} ` +
      pick(r, [
        `systemd[1]: Started ${pick(r, NOUNS)}-worker@${int(r, 1, 9)}.service - ${cap(pick(r, NOUNS))} worker.`,
        `kernel: [${int(r, 1000, 99999)}.${int(r, 100000, 999999)}] oom-kill:constraint=CONSTRAINT_MEMCG,task=node,pid=${int(r, 1000, 65000)}`,
        `dockerd[${int(r, 600, 900)}]: time="2026-11-12T10:00:${pad(i % 60)}Z" level=info msg="ignoring event" topic=/tasks/delete`,
        `containerd[${int(r, 500, 599)}]: shim disconnected id=${hex(r, 12)} namespace=moby`,
        `sshd[${int(r, 2000, 9000)}]: Accepted publickey for ci from 10.0.${int(r, 0, 9)}.${int(r, 2, 254)} port ${int(r, 30000, 60000)}`,
      ]),
  },
  {
    what: 'kubectl describe for the pod that keeps restarting, with its events',
    line: (r, i) =>
      i % 12 === 0
        ? `Name:         ${pick(r, NOUNS)}-api-${hex(r, 10)}-${hex(r, 5)}\nNamespace:    prod-eu\nPriority:     0\nNode:         ip-10-0-${int(r, 1, 250)}-${int(r, 1, 250)}.eu-west-1.compute.internal`
        : `  ${pick(r, ['Warning', 'Normal', 'Normal'])}  ${pick(r, ['BackOff', 'Pulled', 'Created', 'Started', 'Unhealthy', 'Killing'])}  ${int(r, 1, 59)}m (x${int(r, 1, 40)} over ${int(r, 1, 5)}h)  kubelet  ` +
          pick(r, [
            `Liveness probe failed: Get "http://10.1.${int(r, 0, 255)}.${int(r, 0, 255)}:8080/healthz": context deadline exceeded`,
            `Back-off restarting failed container ${pick(r, NOUNS)} in pod`,
            `Container image "registry.internal/${pick(r, NOUNS)}:${int(r, 1, 9)}.${int(r, 0, 40)}.${int(r, 0, 9)}" already present on machine`,
            `Stopping container ${pick(r, NOUNS)}`,
          ]),
  },
  {
    what: 'the PostgreSQL migration 0042_ledger_partitions.sql',
    line: (r, i) => {
      const n = `${pick(r, NOUNS)}_${i}`;
      const k = i % 5;
      if (k === 0)
        return `\nCREATE TABLE IF NOT EXISTS ledger.${n} (\n  id bigserial PRIMARY KEY,\n  tenant_id uuid NOT NULL,`;
      if (k === 1)
        return `  amount_cents bigint NOT NULL CHECK (amount_cents >= 0),\n  created_at timestamptz NOT NULL DEFAULT now()\n);`;
      if (k === 2)
        return `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${n}_tenant_created_idx ON ledger.${n} (tenant_id, created_at DESC);`;
      if (k === 3)
        return `ALTER TABLE ledger.${n} ADD CONSTRAINT ${n}_tenant_fk FOREIGN KEY (tenant_id) REFERENCES core.tenant (id);`;
      return `INSERT INTO ledger.${n} (tenant_id, amount_cents) SELECT tenant_id, amount_cents FROM ledger.legacy_${pick(r, NOUNS)} WHERE created_at > '2026-0${int(r, 1, 9)}-01';`;
    },
  },
  {
    what: 'internal/api/handler.go from the export service',
    line: (r, i) => {
      const n = cap(pick(r, NOUNS));
      const k = i % 8;
      if (k === 0) return `\n// handle${n}${i} serves GET /v1/${n.toLowerCase()}s/{id} for the export UI.`;
      if (k === 1) return `func (h *Handler) handle${n}${i}(w http.ResponseWriter, r *http.Request) {`;
      if (k === 2)
        return `\tid := chi.URLParam(r, "id")\n\tctx, cancel := context.WithTimeout(r.Context(), ${int(r, 2, 30)}*time.Second)\n\tdefer cancel()`;
      if (k === 3) return `\tv, err := h.store.Get${n}(ctx, id)`;
      if (k === 4)
        return `\tif errors.Is(err, store.ErrNotFound) {\n\t\thttp.Error(w, "not found", http.StatusNotFound)\n\t\treturn\n\t}`;
      if (k === 5)
        return `\tif err != nil {\n\t\th.log.Error("get ${n.toLowerCase()}", "id", id, "err", err)\n\t\thttp.Error(w, "internal error", http.StatusInternalServerError)\n\t\treturn\n\t}`;
      if (k === 6) return `\twriteJSON(w, http.StatusOK, v)`;
      return '}';
    },
  },
  {
    what: 'the jest output from the failing CI run',
    line: (r, i) =>
      i % 10 === 9
        ? `    at Object.<anonymous> (src/${pick(r, NOUNS)}/${pick(r, NOUNS)}.service.spec.ts:${int(r, 10, 400)}:${int(r, 5, 40)})`
        : pick(r, [
            `  ✓ ${pick(r, VERBS)}s a ${pick(r, NOUNS)} when the ${pick(r, NOUNS)} is ${pick(r, ['open', 'settled', 'missing'])} (${int(r, 1, 900)} ms)`,
            `  ✕ ${pick(r, VERBS)}s the ${pick(r, NOUNS)} twice without a duplicate ${pick(r, NOUNS)} (${int(r, 1, 5000)} ms)`,
            `    Expected: ${int(r, 0, 100000)}\n    Received: ${int(r, 0, 100000)}`,
            `PASS src/${pick(r, NOUNS)}/${pick(r, VERBS)}-${pick(r, NOUNS)}.spec.ts (${(r() * 9).toFixed(3)} s)`,
            `FAIL src/${pick(r, NOUNS)}/${pick(r, VERBS)}-${pick(r, NOUNS)}.int-spec.ts (${(r() * 30).toFixed(3)} s)`,
          ]),
  },
  {
    what: 'git log --stat for the last two releases',
    line: (r, i) =>
      i % 6 === 0
        ? `\ncommit ${hex(r, 40)}\nAuthor: ${pick(r, ['Ana Ruiz', 'Wei Chen', 'Sam Okafor', 'Lena Vogel'])} <dev${int(r, 1, 40)}@example.com>\n` +
          `Date:   ${pick(r, ['Mon', 'Tue', 'Wed', 'Thu', 'Fri'])} Nov ${int(r, 1, 28)} ${pad(int(r, 8, 19))}:${pad(int(r, 0, 59))}:${pad(int(r, 0, 59))} 2026 +0100\n\n` +
          `    ${cap(pick(r, VERBS))} ${pick(r, NOUNS)}s before the ${pick(r, NOUNS)} export (#${int(r, 100, 4000)})\n`
        : ` src/${pick(r, NOUNS)}/${pick(r, VERBS)}-${pick(r, NOUNS)}.${pick(r, ['ts', 'go', 'py', 'sql'])} | ${int(r, 1, 240)} ${'+'.repeat(int(r, 1, 20))}${'-'.repeat(int(r, 0, 12))}`,
  },
];

/**
 * The user's message for one turn (1-based) of `turns`: turn 1 starts with {@link FACT_SENTENCE}; every turn asks for
 * a one-line reply with no tools (the stub cannot run tools) and pastes about {@link PASTE_CHARS} characters.
 */
export function longPrompt(turn: number, turns: number): string {
  const kind = KINDS[(turn - 1) % KINDS.length] as PasteKind;
  const r = rng(0x5eed + turn * 7919);
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < PASTE_CHARS; i++) {
    const l = kind.line(r, i);
    lines.push(l);
    size += l.length + 1;
  }
  const intro =
    `Reply with one short line; do not run any tool or read any file. ` +
    `Here is ${kind.what} (paste ${turn} of ${turns}, ${pasteTag(turn)}):`;
  const head = turn === 1 ? `${FACT_SENTENCE}\n${intro}` : intro;
  return `${head}\n${lines.join('\n')}\n${pasteEnd(turn)}`;
}
