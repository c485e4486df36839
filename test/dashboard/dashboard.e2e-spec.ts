import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';

import OpenAI from 'openai';
import type { Page } from 'playwright-core';

import { startStack, type Stack } from '../support/stack';
import { compactOnce, isLoopback, openChromium, startWindowStack } from './support';
import { until } from '../support/wait';

// issue 6 item 2: the page is opened first, then a compaction happens, and the page shows it without a reload.
const ARTIFACTS = join(__dirname, '..', 'artifacts');

describe('/guardian/health in headless Chromium', () => {
  let stack: Stack;
  let browser: Awaited<ReturnType<typeof openChromium>>;
  const requested: string[] = [];

  beforeAll(async () => {
    stack = await startWindowStack();
    browser = await openChromium();
    browser.context.on('request', (r) => requested.push(r.url()));
  });
  afterAll(async () => {
    await browser.close();
    await stack.close();
  });

  async function openPage(): Promise<Page> {
    const page = await browser.context.newPage();
    await page.goto(`${stack.guardian.url}/guardian/health`);
    await page.locator('#stream-status', { hasText: 'live' }).waitFor();
    return page;
  }

  it('shows a compaction caused after it was opened, live, without a reload', async () => {
    const page = await openPage();
    expect(await page.locator('#compactions').textContent()).toBe('0');
    expect(await page.locator('#events li[data-kind="compaction"]').count()).toBe(0);
    // A reload would drop this: proof the update arrived in the same document.
    await page.evaluate('window.sameDocument = true');

    expect(await compactOnce(stack, { tag: 'live-page' })).toBe(200);

    await page.locator('#events li[data-kind="compaction"]').first().waitFor();
    // A fresh sidecar: any non-zero count is this compaction (a string predicate would need CSP's unsafe-eval).
    await page.locator('#compactions', { hasText: /^[1-9]\d*$/ }).waitFor();
    expect(await page.evaluate('window.sameDocument')).toBe(true);
    const row = await page.locator('#events li[data-kind="compaction"]').first().textContent();
    expect(row).toContain('stub-model');
    expect(row).toMatch(/\d+(\.\d)?k? \u2192 \d+(\.\d)?k? tokens/);
    await page.locator('#sessions tr', { hasText: 'stub-model' }).first().waitFor();
    expect(await page.locator('#upstream-status').textContent()).toBe('ok');
    expect(await page.locator('#seal-status').textContent()).toBe('ok');

    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard.png'), fullPage: true });
    await page.close();
  });

  it('shows a model name full of markup as text, and runs none of it', async () => {
    const model = '<img src=x onerror="window.pwned=1"><b>bold</b>';
    const page = await openPage();
    expect(await compactOnce(stack, { tag: 'markup-model', model })).toBe(200);

    const row = page.locator('#events li[data-kind="compaction"]', { hasText: model });
    await row.waitFor();
    expect(await row.textContent()).toContain(model);
    await page.locator('#sessions td', { hasText: model }).first().waitFor();
    expect(await page.locator('main img, main b').count()).toBe(0);
    expect(await page.evaluate('window.pwned ?? null')).toBeNull();
    await page.close();
  });

  it('asked for nothing beyond loopback', () => {
    expect(requested.length).toBeGreaterThan(3);
    expect(requested.filter((u) => !isLoopback(u))).toEqual([]);
    expect(requested.some((u) => u.endsWith('/guardian/stats'))).toBe(true);
  });
});

describe('/guardian/health with GUARDIAN_ADMIN_TOKEN set', () => {
  const TOKEN = 'dashboard-admin-token-5f1c';
  let stack: Stack;
  let browser: Awaited<ReturnType<typeof openChromium>>;

  beforeAll(async () => {
    stack = await startWindowStack({ GUARDIAN_ADMIN_TOKEN: TOKEN });
    browser = await openChromium();
  });
  afterAll(async () => {
    await browser.close();
    await stack.close();
  });

  it('asks for the token, then reads stats and the live stream with it in a header, never in a URL', async () => {
    const page = await browser.context.newPage();
    const sent: { url: string; token: string | undefined }[] = [];
    page.on('request', (r) => sent.push({ url: r.url(), token: r.headers()['x-guardian-token'] }));
    await page.goto(`${stack.guardian.url}/guardian/health`);
    await page.locator('#token-panel').waitFor({ state: 'visible' });
    expect(await page.locator('#stream-status').textContent()).toBe('needs a token');

    await page.fill('#token-input', 'not-the-token');
    await page.click('#token-form button');
    await page.locator('#token-why', { hasText: 'may not read' }).waitFor();

    await page.fill('#token-input', TOKEN);
    await page.click('#token-form button');
    await page.locator('#stream-status', { hasText: 'live' }).waitFor();
    await page.locator('#version', { hasText: 'test' }).waitFor();
    expect(await page.locator('#token-panel').isHidden()).toBe(true);

    expect(await compactOnce(stack, { tag: 'token-page' })).toBe(200);
    await page.locator('#events li[data-kind="compaction"]').first().waitFor();

    expect(page.url()).toBe(`${stack.guardian.url}/guardian/health`);
    expect(sent.filter((s) => s.url.includes(TOKEN))).toEqual([]);
    const authed = sent.filter((s) => s.token === TOKEN).map((s) => new URL(s.url).pathname);
    expect(authed).toEqual(expect.arrayContaining(['/guardian/stats', '/guardian/events']));
    await page.close();
  });
});

describe('/guardian/health shows summaries written ahead of need (issue 14 item 6)', () => {
  let stack: Stack;
  let browser: Awaited<ReturnType<typeof openChromium>>;

  beforeAll(async () => {
    stack = await startStack({
      stub: { window: 8192, summaryDelayMs: 100 },
      env: { GUARDIAN_PRECOMPACT_THRESHOLD: '0.8', GUARDIAN_RESERVE_OUTPUT: '4096' },
    });
    browser = await openChromium();
  });
  afterAll(async () => {
    await browser.close();
    await stack.close();
  });

  async function stats(): Promise<{ precompact: { done: number; used: number; running: number } }> {
    const res = await fetch(`${stack.guardian.url}/guardian/stats`);
    return (await res.json()) as { precompact: { done: number; used: number; running: number } };
  }

  it('counts the background summaries used and unused, and that no client waited on one', async () => {
    const page = await browser.context.newPage();
    await page.goto(`${stack.guardian.url}/guardian/health`);
    await page.locator('#stream-status', { hasText: 'live' }).waitFor();
    expect(await page.locator('#precompact-used').textContent()).toBe('0');

    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
    const history: { role: 'system' | 'user' | 'assistant'; content: string }[] = [
      { role: 'system', content: 'You are a careful engineer.' },
    ];
    for (let turn = 1; turn <= 16; turn++) {
      history.push({ role: 'user', content: `Step ${turn}: ${'rollback tenant ledger cursor '.repeat(60)}` });
      const res = await client.chat.completions.create({ model: 'stub-model', messages: history });
      history.push({ role: 'assistant', content: res.choices[0]?.message.content ?? '' });
      // A person reads the answer; the background summary, if one started, finishes meanwhile.
      await until('the background summary to finish', async () => (await stats()).precompact.running === 0);
    }

    const { precompact } = await stats();
    expect(precompact.used).toBeGreaterThan(0);
    // The page polls; it shows the same figures as /guardian/stats once the next poll lands.
    await page.locator('#precompact-used', { hasText: String(precompact.used) }).waitFor();
    expect(await page.locator('#precompact-done').textContent()).toBe(String(precompact.done));
    expect(await page.locator('#summary-waits').textContent()).toBe('0');
    await page.close();
  });
});
