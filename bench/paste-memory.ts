// Big-paste memory (part of `npm run bench -- soak`): the sidecar's peak RSS while it serves one request carrying a
// paste of N MB, on the plain pass-through path (a path guardian only forwards: the baseline) and on the compaction
// path (a chat request whose one user message is the paste: it is archived whole and forwarded as head and tail),
// then the compaction path again under `--max-old-space-size=512` (about what Node picks in the chart's 1 GiB pod):
// served, or the process died. A fresh sidecar per measurement, so one peak does not carry into the next.
import { mb, RssSampler, send, startSidecar, startStubChild } from './soak-support';
import { filler } from './support';

const SIZES_MB = (process.env.BENCH_PASTE_MB ?? '1,10,30,45,60')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);

interface Measure {
  status: string;
  peak: number;
  start: number;
  died: boolean;
}

async function measure(
  upstream: string,
  path: string,
  body: Buffer,
  nodeArgs: string[] = [],
): Promise<Measure> {
  const sidecar = await startSidecar(upstream, { GUARDIAN_RESERVE_OUTPUT: '1024' }, nodeArgs);
  try {
    // Let boot settle, so `start` is the idle footprint.
    await new Promise((r) => setTimeout(r, 500));
    const rss = new RssSampler(sidecar.pid, 20);
    const status = await send(sidecar.url, path, body);
    await new Promise((r) => setTimeout(r, 200));
    rss.stop();
    const died = sidecar.child.exitCode !== null || sidecar.child.signalCode !== null;
    return { status, peak: rss.peak, start: rss.start, died };
  } finally {
    await sidecar.stop();
  }
}

function cell(m: Measure, sizeMb: number): string {
  if (m.died) return `died (${m.status}), peak ${mb(m.peak)}`;
  const ratio = (m.peak - m.start) / (sizeMb * 1024 * 1024);
  return `${m.status}, peak ${mb(m.peak)} (+${ratio.toFixed(1)}x body)`;
}

export async function figures(out: (line: string) => void): Promise<void> {
  out('big paste, peak RSS of the sidecar while it serves one request (fresh process each):');
  out(
    'size    | pass-through (baseline)          | compaction path (spill)          | compaction path, --max-old-space-size=512',
  );
  const stub = await startStubChild(8192);
  try {
    for (const size of SIZES_MB) {
      const paste = `Paste ${size} MB:\n${filler(size * 1024 * 1024, size)}`;
      const raw = Buffer.from(JSON.stringify({ model: 'stub-model', prompt: paste }));
      const chat = Buffer.from(
        JSON.stringify({ model: 'stub-model', messages: [{ role: 'user', content: paste }] }),
      );
      const pass = await measure(stub.url, '/v1/completions', raw);
      const spill = await measure(stub.url, '/v1/chat/completions', chat);
      const small = await measure(stub.url, '/v1/chat/completions', chat, ['--max-old-space-size=512']);
      out(
        `${`${size} MB`.padEnd(7)} | ${cell(pass, size).padEnd(32)} | ${cell(spill, size).padEnd(32)} | ${cell(small, size)}`,
      );
    }
  } finally {
    await stub.stop();
  }
}
