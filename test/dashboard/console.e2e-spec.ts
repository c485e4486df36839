import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';

import OpenAI from 'openai';
import type { Page } from 'playwright-core';

import type { HistoryAnswer, SessionAnswer, SessionsAnswer } from '@guardian/client';
import { createLogger } from '@guardian/telemetry';

import { startGuardian, type RunningGuardian } from '../../apps/guardian/src/bootstrap';
import { GuardianConfig } from '../../apps/guardian/src/config/guardian-config';
import type { Stack } from '../support/stack';
import { until } from '../support/wait';
import { compactOnce, openChromium, overBudgetChat, startWindowStack, WINDOW_ENV } from './support';

// Issue 31: the console. Its history is read from what the sidecar keeps (the compaction log on the volume), so a
// page opened late, reloaded, or served by a restarted sidecar shows what happened before it opened. The page's
// clock is moved ten minutes on (Playwright's clock) instead of waiting ten real minutes.

const ARTIFACTS = join(__dirname, '..', 'artifacts');
/** The README's tour shows this screenshot; the test run makes it. */
const TOUR_SHOT = join(__dirname, '..', '..', 'docs', 'images', 'console.png');
const PLANTED = 'PLANTED-QZX-4471';
const MARKUP = '<img src=x onerror="window.pwned=1">';

async function json<T>(url: string): Promise<T> {
  const res = await fetch(url, { headers: { accept: 'application/json' } });
  expect(res.status).toBe(200);
  return (await res.json()) as T;
}

async function historyTotal(url: string): Promise<number> {
  const h = await json<HistoryAnswer>(`${url}/guardian/history?minutes=60`);
  return h.buckets.reduce((n, b) => n + b.compactions, 0);
}

async function pageWidths(page: Page): Promise<[number, number]> {
  return page.evaluate<[number, number]>(
    '[document.documentElement.scrollWidth, document.documentElement.clientWidth]',
  );
}

describe('the console in headless Chromium', () => {
  let stack: Stack;
  let browser: Awaited<ReturnType<typeof openChromium>>;
  let restarted: RunningGuardian | undefined;

  beforeAll(async () => {
    stack = await startWindowStack();
    browser = await openChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await restarted?.close(200);
    await stack?.close();
  });

  async function open(url: string, opts: { minutesLater?: number; width?: number } = {}): Promise<Page> {
    const page = await browser.context.newPage();
    if (opts.width !== undefined) await page.setViewportSize({ width: opts.width, height: 844 });
    // Date.now() in the page only; its timers keep running (Playwright clock.setFixedTime).
    if (opts.minutesLater !== undefined)
      await page.clock.setFixedTime(new Date(Date.now() + opts.minutesLater * 60_000));
    await page.goto(`${url}/guardian/health`);
    await page.locator('#stream-status', { hasText: 'live' }).waitFor();
    return page;
  }

  it('a page opened 10 minutes after 29 compactions shows all 29, after a reload and a restart too', async () => {
    for (let i = 1; i <= 29; i++) expect(await compactOnce(stack, { tag: `history-${i}` })).toBe(200);
    // The log line is written behind each answer: the page is opened once all 29 are on the volume.
    await until('29 compactions in the log', async () => (await historyTotal(stack.guardian.url)) === 29);

    const page = await open(stack.guardian.url, { minutesLater: 10 });
    await page.locator('#chart-total', { hasText: '29 compactions in the last 60 minutes.' }).waitFor();
    expect(await page.locator('#compactions-chart').getAttribute('data-total')).toBe('29');
    const bars = await page
      .locator('#compactions-chart rect')
      .evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('data-count'))));
    expect(bars.reduce((a, b) => a + b, 0)).toBe(29);
    // All 29 sit about ten minutes back, not in the newest bar.
    expect(bars.slice(-9).every((n) => n === 0)).toBe(true);

    await page.reload();
    await page.locator('#chart-total', { hasText: '29 compactions' }).waitFor();
    await page.close();

    // A new process on the same volume: the history is still there.
    await stack.stopGuardian();
    const config = GuardianConfig.fromEnv(
      {
        ...WINDOW_ENV,
        GUARDIAN_UPSTREAM_URL: stack.stub.baseUrl,
        GUARDIAN_DATA_DIR: stack.dataDir,
        GUARDIAN_LOG_LEVEL: 'silent',
        GUARDIAN_PRECOMPACT_THRESHOLD: '0',
        GUARDIAN_KEEPALIVE_MS: '0',
      },
      { version: 'test', home: stack.dataDir },
    );
    restarted = await startGuardian(config, createLogger({ level: 'silent' }), { port: 0 });
    const after = await open(restarted.url, { minutesLater: 10 });
    await after.locator('#chart-total', { hasText: '29 compactions in the last 60 minutes.' }).waitFor();
    await after.close();
  });

  it('lists alice-1 by name after a 25-turn session; one click shows its compactions and evicted text, as text', async () => {
    const url = restarted?.url ?? stack.guardian.url;
    const client = new OpenAI({
      baseURL: `${url}/v1`,
      apiKey: 'sk-test',
      maxRetries: 0,
      defaultHeaders: { 'X-Guardian-Session': 'alice-1' },
    });
    const history: { role: 'system' | 'user' | 'assistant'; content: string }[] = [
      { role: 'system', content: 'You are a careful engineer.' },
    ];
    for (let turn = 1; turn <= 25; turn++) {
      const planted = turn === 1 ? ` The ticket is ${PLANTED}. ${MARKUP}` : '';
      history.push({
        role: 'user',
        content: `Step ${turn}.${planted} ${'rollback tenant ledger cursor '.repeat(60)}`,
      });
      const res = await client.chat.completions.create({ model: 'stub-model', messages: history });
      history.push({ role: 'assistant', content: res.choices[0]?.message.content ?? '' });
    }
    let alice: SessionsAnswer['sessions'][number] | undefined;
    // Each log line is written behind its answer; the restarted sidecar has served alice-1 only, so its compaction
    // counter says how many lines the log must hold.
    await until('alice-1 compacted, every line in the log', async () => {
      const performed = (await json<{ compactions_performed: number }>(`${url}/guardian/stats`))
        .compactions_performed;
      alice = (await json<SessionsAnswer>(`${url}/guardian/sessions`)).sessions.find(
        (s) => s.name === 'alice-1',
      );
      return performed > 0 && alice?.compactions === performed;
    });
    const detail = await json<SessionAnswer>(`${url}/guardian/sessions/${alice?.id}`);
    const runs = new Set(detail.compactions.map((c) => c.run));

    const page = await open(url);
    const name = page.locator('#session-list button', { hasText: 'alice-1' });
    await name.waitFor();
    expect(await page.locator('#session-list tr[data-session="alice-1"] td').nth(2).textContent()).toBe('25');
    await name.click();
    await page.locator('#session-name', { hasText: 'Session alice-1' }).waitFor();
    await page.locator('#session-compactions tr[data-kind="compaction"]').first().waitFor();
    expect(await page.locator('#session-compactions tr[data-kind="compaction"]').count()).toBe(
      alice?.compactions,
    );
    const evicted = page.locator('#session-spans pre', { hasText: PLANTED });
    await evicted.waitFor();
    expect(await evicted.textContent()).toContain(MARKUP);
    expect(await page.locator('#session-spans img').count()).toBe(0);
    expect(await page.evaluate('window.pwned ?? null')).toBeNull();
    // The span read carries its log's proof bundle (issue 29), shown as text beside it. The planted span is the
    // session's first, committed by the time the 25 turns were answered.
    await page
      .locator('#session-spans .span', { hasText: PLANTED })
      .locator('pre.proof', { hasText: 'c2sp.org/tlog-proof' })
      .waitFor({ state: 'attached' });

    // The search box: the recall API's search over the archive finds the planted token's span.
    await page.fill('#search-input', PLANTED);
    await page.press('#search-input', 'Enter');
    const hit = page.locator('#search-results li', { hasText: PLANTED }).first();
    await hit.waitFor();
    expect(runs.has(await hit.getAttribute('data-run'))).toBe(true);

    // The live events, filtered to compactions of alice-1: every row shown is one.
    await page.selectOption('#event-kind', 'compaction');
    await page.selectOption('#event-session', { label: 'alice-1' });
    const shown = await page
      .locator('#events li:not([hidden])')
      .evaluateAll((lis) => lis.map((li) => [li.getAttribute('data-kind'), li.getAttribute('data-session')]));
    expect(shown.length).toBeGreaterThan(0);
    expect(new Set(shown.map((s) => s.join(' ')))).toEqual(new Set([`compaction ${alice?.id.slice(0, 8)}`]));

    // Usage: the page's 24 h total of kept-out tokens is the endpoint's.
    const summary = await json<{ periods: { '24h': { total: { tokens_kept_out: number } } } }>(
      `${url}/guardian/usage/summary`,
    );
    const kept = page.locator('#usage tr[data-owner="everyone shown"] td[data-field="tokens_kept_out"]');
    await kept
      .filter({ hasText: summary.periods['24h'].total.tokens_kept_out.toLocaleString('en-US') })
      .waitFor();

    await mkdir(ARTIFACTS, { recursive: true });
    await mkdir(join(TOUR_SHOT, '..'), { recursive: true });
    await page.evaluate('window.scrollTo(0, 0)');
    await page.screenshot({ path: TOUR_SHOT });
    await page.screenshot({ path: join(ARTIFACTS, 'console.png'), fullPage: true });
    await page.close();
  });

  it('fits a 390 px phone: the page never scrolls sideways, with a session open too', async () => {
    const url = restarted?.url ?? stack.guardian.url;
    const page = await open(url, { width: 390 });
    await page.locator('#session-list button', { hasText: 'alice-1' }).waitFor();
    await page.locator('#events li').first().waitFor();
    const [scroll, client] = await pageWidths(page);
    expect(client).toBeLessThanOrEqual(390);
    expect(scroll).toBe(client);
    await page.locator('#session-list button', { hasText: 'alice-1' }).click();
    await page.locator('#session-spans pre', { hasText: PLANTED }).waitFor();
    await page.fill('#search-input', PLANTED);
    await page.press('#search-input', 'Enter');
    await page.locator('#search-results li').first().waitFor();
    const [scrollOpen, clientOpen] = await pageWidths(page);
    expect(scrollOpen).toBe(clientOpen);
    await page.close();
  });

  it('is usable from the keyboard: a session opens with Enter and Escape goes back', async () => {
    const url = restarted?.url ?? stack.guardian.url;
    const page = await open(url);
    const name = page.locator('#session-list button', { hasText: 'alice-1' });
    await name.waitFor();
    await name.focus();
    await page.keyboard.press('Enter');
    await page.locator('#session-panel').waitFor({ state: 'visible' });
    expect(await page.evaluate('document.activeElement.id')).toBe('session-name');
    await page.keyboard.press('Escape');
    await page.locator('#session-panel').waitFor({ state: 'hidden' });
    const aliceId = await name.getAttribute('data-session-id');
    const focused = (): Promise<unknown> =>
      page.evaluate('document.activeElement.dataset.sessionId ?? document.activeElement.tagName');
    expect(await focused()).toBe(aliceId);
    // A compaction of another session re-draws the list (the page asks again on its event): the focus stays on
    // alice-1's button. (A string waitForFunction cannot poll here: the page's CSP refuses eval.)
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-test',
        'x-guardian-session': 'alice-2',
      },
      body: overBudgetChat({ tag: 'keyboard-refresh' }),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    await page.locator('#session-list button', { hasText: 'alice-2' }).waitFor();
    expect(await focused()).toBe(aliceId);
    await page.close();
  });
});
