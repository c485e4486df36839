/**
 * Works-with check against a REAL upstream: llama-server on the tiny model (../shared/models/README.md, beside the checkout). Not part
 * of `npm test`: it needs a llama-server binary built outside the repository and the built sidecar (`npm run build`).
 *
 *   node -r ./test/support/swc-register.js test/works-with/run-upstreams.ts [--llama-server BIN] [--model GGUF] [--keep]
 *
 * Run 1 (window detected): a growing over-budget conversation through the sidecar with the official `openai` client
 * (every other turn streamed), then one with `@anthropic-ai/sdk` on /v1/messages when llama-server answers it.
 * Run 2 (GUARDIAN_NUM_CTX larger than the real context): one request guardian believes fits, which the real server
 * rejects; guardian must recover it with one retry. One row per check, in the seed's "Works with" style.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

import { DEFAULT_LLAMA_SERVER, DEFAULT_MODEL, startLlama, type Llama } from './support/llama';
import { reexecInLoopbackNetns } from './support/netns';
import { getJson } from './support/proc';
import { check, printRows, type Row } from './support/report';
import { startSidecar } from './support/sidecar';
import { startTap, type Tap } from './support/tap';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const BIN = arg('--llama-server') ?? process.env.CG_LLAMA_SERVER ?? DEFAULT_LLAMA_SERVER;
const MODEL_FILE = arg('--model') ?? process.env.CG_LLAMA_MODEL ?? DEFAULT_MODEL;
const KEEP = process.argv.includes('--keep');
const NAME = 'llama.cpp';

const WORDS = (
  'the a build test server cache window token river stone garden window yellow quiet metal paper north ' +
  'engine signal market winter letter silver planet kitchen bridge forest orange mirror castle rocket ' +
  'harbor velvet thunder pocket lantern meadow copper island shadow crystal falcon ribbon canyon ember'
).split(' ');

/** Deterministic filler prose (no real data): ~`chars` characters of common words. */
function filler(seed: number, chars: number): string {
  let x = seed * 2654435761;
  const out: string[] = [];
  let len = 0;
  while (len < chars) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const w = WORDS[x % WORDS.length]!;
    out.push(w);
    len += w.length + 1;
  }
  return out.join(' ');
}

type Msg = { role: 'system' | 'user' | 'assistant'; content: string };

const generationCalls = (tap: Tap) =>
  tap.records.filter((r) => r.method === 'POST' && /\/v1\/(chat\/completions|messages)$/.test(r.url));

/**
 * The tiny model's EOS bias (`-l 2+1`) makes it answer a summary request with 0-10 characters, under the default
 * GUARDIAN_MIN_SUMMARY_CHARS (40), so with defaults every compaction fails open (seed: fail open). The plumbing
 * checks (window, compaction, /tokenize, recovery) therefore run with the gate at 0; `overflowRun` also runs once
 * with the defaults to show what a user with such a model sees.
 */
const PLUMBING_ENV = { GUARDIAN_MIN_SUMMARY_CHARS: '0' };

async function detectedRun(llama: Llama, work: string, model: string): Promise<Row[]> {
  const v = llama.version;
  const tap = await startTap(llama.url);
  const sidecar = await startSidecar({
    upstreamUrl: `${tap.url}/v1`,
    dataDir: join(work, 'data-detected'),
    logPath: join(work, 'sidecar-detected.log'),
    env: PLUMBING_ENV,
  });
  const rows: Row[] = [];
  try {
    const props = await getJson<{ default_generation_settings?: { n_ctx?: number } }>(`${llama.url}/props`);
    const nCtx = props.default_generation_settings?.n_ctx;
    const modelsBody = await getJson<{ data?: Record<string, unknown>[] }>(`${llama.url}/v1/models`);
    const advertises = modelsBody.data?.some((m) => 'max_model_len' in m) ?? false;

    const openai = new OpenAI({ baseURL: `${sidecar.url}/v1`, apiKey: 'dummy-key', maxRetries: 0 });
    const messages: Msg[] = [{ role: 'system', content: 'You are a terse assistant in a proxy test.' }];
    const failures: string[] = [];
    /** llama-server's own 500 when the random model's output does not parse as the chat format: not guardian's. */
    let serverOwn = 0;
    let turns = 0;
    // Small steps (~250 estimated tokens a turn, the band is 15% of a 4,096 budget) so that some turn crosses the
    // budget inside the band where guardian asks /tokenize for the exact count.
    for (let i = 0; i < 36; i++) {
      messages.push({ role: 'user', content: `Turn ${i}. ${filler(i + 1, 900)}` });
      turns += 1;
      try {
        let text = '';
        if (i % 2 === 1) {
          const stream = await openai.chat.completions.create({
            model,
            messages,
            max_tokens: 24,
            stream: true,
          });
          for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
        } else {
          const res = await openai.chat.completions.create({ model, messages, max_tokens: 24 });
          if (!res.choices[0]) throw new Error('no choice in the answer');
          text = res.choices[0].message.content ?? '';
        }
        messages.push({ role: 'assistant', content: text.trim() || '(empty)' });
      } catch (err) {
        failures.push(`turn ${i}: ${err instanceof Error ? err.message.slice(0, 120) : String(err)}`);
        if (err instanceof Error && /peg-native|expected .* format/.test(err.message)) serverOwn += 1;
        messages.push({ role: 'assistant', content: '(failed)' });
      }
    }
    const stats = await sidecar.stats();
    const windows = (stats.windows ?? {}) as Record<string, { window: number; source: string }>;
    const w = windows[model];
    const lines = sidecar.logLines();
    const tokenizeCalls = tap.records.filter((r) => r.method === 'POST' && r.url === '/tokenize');
    const compactions = Number(stats.compactions_performed ?? 0);
    const sources = lines.map((l) => String(l.count_source));
    rows.push(
      check(
        `${NAME} window`,
        v,
        w !== undefined && w.source.startsWith('detected:') && w.window === nCtx,
        `window ${w ? `${w.window} from ${w.source}` : 'not recorded'}, server n_ctx ${String(nCtx)}`,
        `windows[${model}] = ${JSON.stringify(w)}; /props n_ctx ${String(nCtx)}; /v1/models max_model_len: ${advertises ? 'yes' : 'no'}`,
      ),
      check(
        `${NAME} compaction`,
        v,
        compactions >= 1,
        'no compaction in a conversation well over budget',
        `turns ${turns}, compactions ${compactions}, reused ${String(stats.summaries_reused)}, summariser calls ${String(stats.summariser_calls)}, ` +
          `retries ${String(stats.summary_retries)}, budget ${String(stats.effective_input_budget)}, fail_open ${JSON.stringify(stats.fail_open)}`,
      ),
      check(
        `${NAME} count_source`,
        v,
        tokenizeCalls.some((r) => r.status === 200) && sources.includes('tokenize'),
        tokenizeCalls.length === 0
          ? 'guardian never asked /tokenize'
          : `${tokenizeCalls.length} /tokenize calls near the budget, but no compaction was decided on their count (log count_source ${JSON.stringify([...new Set(sources)])})`,
        `/tokenize calls ${tokenizeCalls.length} (status ${JSON.stringify([...new Set(tokenizeCalls.map((r) => r.status))])}); log count_source ${JSON.stringify(sources)}; first compaction tokens_before ${String(lines[0]?.tokens_before)} (budget ${String(stats.effective_input_budget)})`,
      ),
      check(
        `${NAME} every request answered`,
        v,
        // llama-server's own 500s (see serverOwn) reached the client as the server sent them: that is answered.
        failures.length === serverOwn,
        `${failures.length}/${turns} failed, ${serverOwn} of them llama-server's own 500 for unparsable random output, forwarded as sent: ${failures[0] ?? ''}`,
        `${serverOwn} of ${turns} answered with llama-server's own 500 (random output its chat parser rejects), forwarded as sent; chat calls to the server ${generationCalls(tap).length} (statuses ${JSON.stringify(generationCalls(tap).map((r) => r.status))})`,
      ),
    );
    rows.push(await messagesCheck(llama, sidecar.url, model, () => sidecar.stats()));
  } finally {
    await sidecar.stop();
    await tap.close();
  }
  return rows;
}

/** `/v1/messages` through the sidecar with the official Anthropic SDK, when llama-server answers that route. */
async function messagesCheck(
  llama: Llama,
  sidecarUrl: string,
  model: string,
  stats: () => Promise<Record<string, unknown>>,
): Promise<Row> {
  const direct = await fetch(`${llama.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await direct.arrayBuffer();
  if (direct.status !== 200)
    return check(`${NAME} /v1/messages`, llama.version, false, `server answers ${direct.status}`);
  const before = Number((await stats()).compactions_performed ?? 0);
  const client = new Anthropic({ baseURL: sidecarUrl, apiKey: 'dummy-key', maxRetries: 0 });
  const messages: Anthropic.MessageParam[] = [];
  const failures: string[] = [];
  let serverOwn = 0;
  for (let i = 0; i < 12; i++) {
    messages.push({ role: 'user', content: `Part ${i}. ${filler(100 + i, 2200)}` });
    try {
      const res = await client.messages.create({ model, max_tokens: 24, system: 'Be terse.', messages });
      const text = res.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
      messages.push({ role: 'assistant', content: text.trim() || '(empty)' });
    } catch (err) {
      failures.push(`part ${i}: ${err instanceof Error ? err.message.slice(0, 120) : String(err)}`);
      if (err instanceof Error && /peg-native|expected .* format/.test(err.message)) serverOwn += 1;
      messages.push({ role: 'assistant', content: '(failed)' });
    }
  }
  const after = Number((await stats()).compactions_performed ?? 0);
  return check(
    `${NAME} /v1/messages`,
    llama.version,
    failures.length === serverOwn && after > before,
    failures.length > serverOwn
      ? `${failures.length}/12 failed, ${serverOwn} of them llama-server's own 500 for unparsable random output, forwarded as sent: ${failures[0] ?? ''}`
      : 'answered but never compacted',
    `12 Anthropic SDK turns, compactions ${after - before}, llama-server's own 500s forwarded as sent ${serverOwn}`,
  );
}

async function overflowRun(
  llama: Llama,
  work: string,
  model: string,
  variant: { label: string; env: Record<string, string> },
): Promise<Row> {
  const tap = await startTap(llama.url);
  // Guardian believes the window is 32,768 (budget 24,576) while the server holds 8,192: this request fits for
  // guardian and overflows for real.
  const sidecar = await startSidecar({
    upstreamUrl: `${tap.url}/v1`,
    dataDir: join(work, `data-overflow${variant.label}`),
    logPath: join(work, `sidecar-overflow${variant.label}.log`),
    env: { GUARDIAN_NUM_CTX: '32768', ...variant.env },
  });
  try {
    const messages: Msg[] = [{ role: 'system', content: 'You are a terse assistant in a proxy test.' }];
    for (let i = 0; i < 20; i++) {
      messages.push({ role: 'user', content: `Note ${i}. ${filler(200 + i, 2000)}` });
      messages.push({ role: 'assistant', content: `Noted ${i}.` });
    }
    messages.push({ role: 'user', content: 'Reply with one word.' });
    const openai = new OpenAI({ baseURL: `${sidecar.url}/v1`, apiKey: 'dummy-key', maxRetries: 0 });
    let failure = '';
    try {
      const res = await openai.chat.completions.create({ model, messages, max_tokens: 16 });
      if (!res.choices[0]) failure = 'answer without a choice';
    } catch (err) {
      failure = `client got ${err instanceof Error ? err.message.slice(0, 140) : String(err)}`;
    }
    const stats = await sidecar.stats();
    const calls = generationCalls(tap);
    const overflows = calls.filter((r) => r.status === 400).length;
    const recovered = Number(stats.overflow_recovered ?? 0);
    const windows = JSON.stringify(stats.windows);
    const ok = !failure && overflows === 1 && recovered === 1;
    return check(
      `${NAME} overflow recovery${variant.label}`,
      llama.version,
      ok,
      failure || `overflows ${overflows}, overflow_recovered ${recovered}`,
      `server chat calls ${calls.length} (statuses ${JSON.stringify(calls.map((r) => r.status))}), overflow_recovered ${recovered}, ` +
        `compactions ${String(stats.compactions_performed)}, windows ${windows}, fail_open ${JSON.stringify(stats.fail_open)}`,
    );
  } finally {
    await sidecar.stop();
    await tap.close();
  }
}

async function main(): Promise<void> {
  const isolation = reexecInLoopbackNetns();
  const work = mkdtempSync(join(tmpdir(), 'cg-works-with-upstreams-'));
  process.stdout.write(`# llama-server ${BIN} on ${MODEL_FILE}; isolation: ${isolation.why}\n`);
  let llama: Llama | undefined;
  const rows: Row[] = [];
  try {
    llama = await startLlama({ bin: BIN, model: MODEL_FILE, logPath: join(work, 'llama-server.log') });
    const models = await getJson<{ data?: { id: string }[] }>(`${llama.url}/v1/models`);
    const model = models.data?.[0]?.id ?? 'default';
    rows.push(...(await detectedRun(llama, work, model)));
    rows.push(await overflowRun(llama, work, model, { label: '', env: PLUMBING_ENV }));
    rows.push(await overflowRun(llama, work, model, { label: ' (default settings)', env: {} }));
  } catch (err) {
    rows.push(
      check(
        NAME,
        llama?.version ?? '-',
        false,
        `harness error: ${err instanceof Error ? err.message : String(err)}`,
      ),
    );
  } finally {
    await llama?.stop();
    printRows(rows);
    if (KEEP) process.stdout.write(`# work folder kept: ${work}\n`);
    else rmSync(work, { recursive: true, force: true });
  }
  process.exitCode = rows.every((r) => r.result === 'PASS') ? 0 : 1;
}

void main();
