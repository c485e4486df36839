/**
 * Works-with check beside the REAL LiteLLM proxy (issue 19), in both topologies, against the vLLM-like stub (and a
 * llama.cpp-like one) on loopback. Not part of `npm test`: it needs LiteLLM in a venv outside the repository
 * (`--install` puts `litellm[proxy]==1.108.7` in ~/.cache/context-guardian/litellm-venv) and the built sidecar.
 *
 *   node -r ./test/support/swc-register.js test/works-with/run-litellm.ts [--install] [--venv DIR] [--keep] [--no-netns]
 *
 * (a) clients -> guardian -> LiteLLM -> backend; (b) clients -> LiteLLM -> guardian -> backend, with two developers'
 * keys and their session headers. One LiteLLM process serves both: its model groups route to the backends directly
 * (for (a) and the no-guardian baseline) or to guardian (for (b)). One row per check, in the seed's style.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startStub } from '@guardian/stub-backend';

import { DEFAULT_LITELLM_VENV, installLitellm, startLitellm, type Litellm } from './support/litellm';
import { behindRows, startBehind, stopBehind, type Behind } from './support/litellm-behind';
import type { LitellmRun } from './support/litellm-checks';
import { deployRows } from './support/litellm-deploy';
import { DIRECT, frontRows, LLAMA_DIRECT } from './support/litellm-front';
import { chatSession, firstRefused } from './support/litellm-session';
import { developers, sessionRows } from './support/litellm-sessions';
import { reexecInLoopbackNetns } from './support/netns';
import { check, printRows, type Row } from './support/report';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const VENV = arg('--venv') ?? process.env.CG_LITELLM_VENV ?? DEFAULT_LITELLM_VENV;
const KEEP = process.argv.includes('--keep');
/** The backend's window: big enough for the clients' requests, small enough that 30 turns of 4,000 characters overflow it. */
const WINDOW = 16384;

async function main(): Promise<void> {
  if (process.argv.includes('--install')) {
    // Before the namespace: pip needs the package registry.
    process.stdout.write(`# installed ${installLitellm(VENV)}\n`);
  }
  const isolation = reexecInLoopbackNetns();
  const work = mkdtempSync(join(tmpdir(), 'cg-works-with-litellm-'));
  process.stdout.write(`# LiteLLM from ${VENV}; isolation: ${isolation.why}\n`);
  const rows: Row[] = [];
  const stub = await startStub({ window: WINDOW, flavor: 'vllm' });
  const llamaStub = await startStub({ window: WINDOW, flavor: 'llamacpp' });
  let behind: Behind | undefined;
  let litellm: Litellm | undefined;
  try {
    behind = await startBehind({ stubUrl: stub.url, work });
    const devs = developers();
    const masterKey = `sk-master-${randomBytes(16).toString('hex')}`;
    litellm = await startLitellm({
      venv: VENV,
      workDir: join(work, 'litellm'),
      masterKey,
      models: [
        { name: DIRECT, model: 'hosted_vllm/stub-model', apiBase: stub.baseUrl },
        { name: LLAMA_DIRECT, model: 'openai/stub-model', apiBase: llamaStub.baseUrl },
        ...behind.models,
      ],
      forwardHeadersFor: behind.forwardHeadersFor,
      developerKeys: Object.fromEntries(devs.map((d) => [d.key, d.name])),
    });
    const run: LitellmRun = { stub, llamaStub, litellm, venv: VENV, masterKey, work };
    // The baseline: the same 30-turn session straight to LiteLLM, no guardian anywhere.
    const direct = await chatSession({
      baseURL: `${litellm.url}/v1`,
      apiKey: masterKey,
      model: DIRECT,
      turns: 30,
      chars: 4000,
      stream: () => false,
    });
    run.directRefusedAt = firstRefused(direct);
    process.stdout.write(
      `# straight to LiteLLM: ${direct.filter((t) => t.ok).length}/30 answered, first refused at turn ${String(run.directRefusedAt)}\n`,
    );
    rows.push(...(await frontRows(run)));
    rows.push(...(await behindRows(run, behind)));
    rows.push(...(await sessionRows(run, behind, devs)));
    rows.push(...(await deployRows(run, behind)));
  } catch (err) {
    rows.push(
      check(
        'LiteLLM',
        litellm?.version ?? '-',
        false,
        `harness error: ${err instanceof Error ? err.message : String(err)}`,
      ),
    );
  } finally {
    await litellm?.stop();
    if (behind) await stopBehind(behind);
    await stub.close();
    await llamaStub.close();
    printRows(rows);
    if (KEEP) process.stdout.write(`# work folder kept: ${work}\n`);
    else rmSync(work, { recursive: true, force: true });
  }
  process.exitCode = rows.every((r) => r.result === 'PASS') ? 0 : 1;
}

void main();
