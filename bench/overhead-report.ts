// The overhead benchmark's report: per-target figures, the sidecar's targets against the bare proxy, and LiteLLM's
// figures beside them when it ran as a peer (issue 19).
import { int, median, ms } from './support';

export type TargetName = 'direct' | 'bare' | 'sidecar' | 'litellm' | 'baseline';
/**
 * Always measured; `litellm` joins when its venv is present (litellm-peer.ts), `baseline` (an earlier build of the
 * sidecar, BENCH_BASELINE) when one is given, so a change is measured before and after in the same rounds.
 */
export const TARGETS: readonly TargetName[] = ['direct', 'bare', 'sidecar'];
const LABEL: Record<TargetName, string> = {
  direct: '(a) direct',
  bare: '(b) bare',
  sidecar: '(c) sidecar',
  litellm: '(d) LiteLLM',
  baseline: '(e) baseline',
};

export interface LoadFigures {
  p50: number;
  p99: number;
  rps: number;
  errors: number;
  /** CPU milliseconds the server under test spent per answered request (the stub for `direct`). */
  cpuMs: number;
}

function ratio(a: number, b: number): string {
  return b > 0 ? `${(a / b).toFixed(2)}x` : 'n/a';
}

function verdict(ok: boolean): string {
  return ok ? 'met' : 'MISSED';
}

export function report(r: {
  targets: readonly TargetName[];
  figures: Record<string, LoadFigures[]>;
  stream: Partial<Record<TargetName, number[]>>;
  rounds: number;
  seconds: number;
  streamN: number;
  bytes: number;
}): string[] {
  const med = (t: TargetName, c: number, k: keyof LoadFigures) =>
    median((r.figures[`${t}@${c}`] ?? []).map((f) => f[k]));
  const lines = [
    `non-streamed chat requests of ${r.bytes} bytes; ${r.rounds} interleaved rounds of ${r.seconds} s per target and connection count; medians of the rounds`,
    `servers: stub, bare proxy and sidecar (built main.js, default settings)${r.targets.includes('litellm') ? ', LiteLLM' : ''} each in its own process; autocannon in the bench process`,
    'CPU/request: CPU time (user+system, /proc) of the server under test per answered request: the stub for (a), the proxy for the others',
  ];
  for (const c of [1, 64]) {
    lines.push(`-- ${c} connection${c > 1 ? 's' : ''}`);
    for (const t of r.targets) {
      const errors = (r.figures[`${t}@${c}`] ?? []).reduce((n, f) => n + f.errors, 0);
      lines.push(
        `${LABEL[t].padEnd(12)} p50 ${ms(med(t, c, 'p50'))}  p99 ${ms(med(t, c, 'p99'))}  ${int(med(t, c, 'rps')).padStart(6)} req/s  ${ms(med(t, c, 'cpuMs'))} CPU/request${errors ? `  (${errors} errors)` : ''}`,
      );
    }
    for (const k of ['p50', 'p99', 'rps'] as const) {
      lines.push(
        `ratio ${k}: c/a ${ratio(med('sidecar', c, k), med('direct', c, k))}, c/b ${ratio(med('sidecar', c, k), med('bare', c, k))}`,
      );
    }
  }
  const added = (k: 'p50' | 'p99', t: TargetName) => med(t, 1, k) - med('direct', 1, k);
  const verdicts = (t: TargetName): string[] => {
    const p50x = added('p50', t) / added('p50', 'bare');
    const p99x = added('p99', t) / added('p99', 'bare');
    const rpsShare = med(t, 64, 'rps') / med('bare', 64, 'rps');
    const name = LABEL[t].slice(4);
    return [
      `${name}, 1 conn p50: bare adds ${ms(added('p50', 'bare'))}, ${name} adds ${ms(added('p50', t))} = ${p50x.toFixed(2)}x (target <= 1.5x): ${verdict(p50x <= 1.5)}`,
      `${name}, 1 conn p99: bare adds ${ms(added('p99', 'bare'))}, ${name} adds ${ms(added('p99', t))} = ${p99x.toFixed(2)}x (target <= 2x): ${verdict(p99x <= 2)}`,
      `${name}, 64 conns: ${(rpsShare * 100).toFixed(1)}% of the bare proxy's req/s (target >= 80%): ${verdict(rpsShare >= 0.8)}`,
      `${name}, CPU per request at 64 conns: bare ${ms(med('bare', 64, 'cpuMs'))}, ${name} ${ms(med(t, 64, 'cpuMs'))} = ${ratio(med(t, 64, 'cpuMs'), med('bare', 64, 'cpuMs'))} (what bounds req/s on a machine to itself)`,
    ];
  };
  lines.push('-- targets', ...verdicts('sidecar'));
  if (r.targets.includes('baseline')) lines.push(...verdicts('baseline'));
  if (r.targets.includes('litellm')) {
    // No target for a peer: its figures stand beside the sidecar's, the way a team running both would see them.
    lines.push(
      '-- beside LiteLLM (each over direct; req/s at 64 connections)',
      `1 conn p50 added: bare ${ms(added('p50', 'bare'))}, sidecar ${ms(added('p50', 'sidecar'))}, LiteLLM ${ms(added('p50', 'litellm'))}`,
      `1 conn p99 added: bare ${ms(added('p99', 'bare'))}, sidecar ${ms(added('p99', 'sidecar'))}, LiteLLM ${ms(added('p99', 'litellm'))}`,
      `64 conns req/s: sidecar ${int(med('sidecar', 64, 'rps'))}, LiteLLM ${int(med('litellm', 64, 'rps'))} = sidecar ${ratio(med('sidecar', 64, 'rps'), med('litellm', 64, 'rps'))} LiteLLM's`,
      `CPU per request at 64 conns: sidecar ${ms(med('sidecar', 64, 'cpuMs'))}, LiteLLM ${ms(med('litellm', 64, 'cpuMs'))}`,
    );
  }
  lines.push(
    `-- streaming, time to first body byte (${r.streamN} sequential requests per target per round; median of the rounds' p50)`,
  );
  const ttfb = (t: TargetName) => median(r.stream[t] ?? []);
  for (const t of r.targets) {
    lines.push(
      `${LABEL[t].padEnd(12)} ttfb p50 ${ms(ttfb(t))}${t === 'direct' ? '' : `  added over direct ${ms(ttfb(t) - ttfb('direct'))}`}`,
    );
  }
  return lines;
}
