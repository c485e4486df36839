import { request as httpRequest } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { chromium, type BrowserContext } from 'playwright-core';

import { startStack, type Stack } from '../support/stack';
import { MUST_COME_MS } from '../support/wait';

/** A fixed 8,192-token window (the stub's) so any model name compacts, detected or not. */
export const WINDOW_ENV = { GUARDIAN_NUM_CTX: '8192', GUARDIAN_RESERVE_OUTPUT: '1024' };

export function startWindowStack(env: Record<string, string> = {}): Promise<Stack> {
  return startStack({ stub: { window: 8192 }, env: { ...WINDOW_ENV, ...env } });
}

const WORDS = ['ledger', 'replica', 'cursor', 'timeout', 'invoice', 'handler', 'rollback', 'tenant'];

function paragraph(seed: number, words: number): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(WORDS[(i * 7 + seed * 3) % WORDS.length] ?? 'note');
  return out.join(' ');
}

/**
 * A chat conversation well over the 6,963-token budget of WINDOW_ENV (ten user turns of about 900 tokens), so
 * one request through the sidecar compacts. `tag` makes it a conversation of its own (its own session key);
 * `marker` is planted in the system prompt, a user turn, a pin and an assistant turn.
 */
export function overBudgetChat(opts: { model?: string; tag: string; marker?: string }): string {
  const marker = opts.marker ?? '';
  const messages: { role: string; content: string }[] = [
    { role: 'system', content: `You help with the ${opts.tag} migration. ${marker}` },
  ];
  for (let turn = 1; turn <= 10; turn++) {
    const pin = turn === 1 && marker ? ` Remember this: the tag is ${marker}.` : '';
    messages.push({ role: 'user', content: `Step ${turn} of ${opts.tag}.${pin}\n${paragraph(turn, 380)}` });
    if (turn < 10)
      messages.push({ role: 'assistant', content: `Checked step ${turn}. ${turn === 5 ? marker : ''}` });
  }
  return JSON.stringify({ model: opts.model ?? 'stub-model', messages, max_tokens: 32 });
}

/**
 * Sends one over-budget chat request through the sidecar (`baseURL` ends in `/v1`) and reads the whole answer;
 * `session` is sent as its X-Guardian-Session.
 */
export async function compactOnce(
  sidecar: Pick<Stack, 'baseURL'>,
  opts: { model?: string; tag: string; marker?: string; session?: string },
): Promise<number> {
  const res = await fetch(`${sidecar.baseURL}/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: 'Bearer sk-test',
      ...(opts.session === undefined ? {} : { 'x-guardian-session': opts.session }),
    },
    body: overBudgetChat(opts),
  });
  await res.arrayBuffer();
  return res.status;
}

/** A GET with exact headers (fetch will not send a made-up Host). */
export function rawGet(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).toString('utf8'),
          headers: res.headers,
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Debian's chromium through playwright-core, headless, with a fresh profile and no background traffic. */
export async function openChromium(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = await mkdtemp(join(tmpdir(), 'cg-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
    viewport: { width: 1280, height: 900 },
    timeout: MUST_COME_MS,
  });
  // Playwright gives up on a wait after 30 s by default: on a busy machine that limit, not the page, decided the
  // verdict. Every wait in these tests is for something the page must show; the limit only ends a hang.
  context.setDefaultTimeout(MUST_COME_MS);
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** True for URLs the page may load: the sidecar on loopback, or data the page builds itself. */
export function isLoopback(url: string): boolean {
  const u = new URL(url);
  if (u.protocol === 'data:' || u.protocol === 'blob:' || u.protocol === 'about:') return true;
  return ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname);
}
