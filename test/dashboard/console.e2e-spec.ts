import OpenAI from 'openai';
import type { Page } from 'playwright-core';

import type { HistoryAnswer, SessionAnswer, SessionsAnswer } from '@guardian/client';
import { createLogger } from '@guardian/telemetry';

import { startGuardian, type RunningGuardian } from '../../apps/guardian/src/bootstrap';
import { GuardianConfig } from '../../apps/guardian/src/config/guardian-config';
import type { Stack } from '../support/stack';
import { until } from '../support/wait';
import { boxBetween, cspDirectives, lowContrast, screenshot } from './page-checks';
import { compactOnce, openChromium, startWindowStack, WINDOW_ENV } from './support';

// Issue 31: the console. Its history is read from what the sidecar keeps (the compaction log on the volume), so a
// page opened late, reloaded, or served by a restarted sidecar shows what happened before it opened. The page's
// clock is moved ten minutes on (Playwright's clock) instead of waiting ten real minutes. The README's screenshots
// (docs/images/console.png, console-phone.png) are made here (page-checks.ts `screenshot`).

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

  /** A new sidecar process on the same volume, without Redis (the memo is the process's own): the url it serves. */
  async function restart(): Promise<string> {
    await stack.stopGuardian();
    await restarted?.close(200);
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
    return restarted.url;
  }

  async function open(
    url: string,
    opts: { minutesLater?: number; width?: number; scheme?: 'light' | 'dark' } = {},
  ): Promise<Page> {
    const page = await browser.context.newPage();
    if (opts.width !== undefined) await page.setViewportSize({ width: opts.width, height: 844 });
    if (opts.scheme !== undefined) await page.emulateMedia({ colorScheme: opts.scheme });
    // Date.now() in the page only; its timers keep running (Playwright clock.setFixedTime).
    if (opts.minutesLater !== undefined)
      await page.clock.setFixedTime(new Date(Date.now() + opts.minutesLater * 60_000));
    await page.goto(`${url}/guardian/health`);
    await page.locator('#stream-status', { hasText: 'live' }).waitFor();
    return page;
  }

  it('a page opened 10 minutes after 29 compactions shows all 29, after a reload and a restart too', async () => {
    for (let i = 1; i <= 29; i++)
      expect(await compactOnce(stack, { tag: `history-${i}`, session: 'nightly-evals' })).toBe(200);
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
    const after = await open(await restart(), { minutesLater: 10 });
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
    // Its compactions over time, on the finest scale that holds them: all within the last few minutes.
    expect(await page.locator('#session-chart').getAttribute('data-total')).toBe(String(alice?.compactions));
    expect(await page.locator('#session-chart-scale').textContent()).toBe(
      'Compactions per minute, last hour.',
    );
    const evicted = page.locator('#session-spans pre', { hasText: PLANTED });
    await evicted.waitFor();
    // The spans are shown in the compactions' order (newest first), whichever read answers first.
    expect(
      await page
        .locator('#session-spans .span')
        .evaluateAll((boxes) =>
          boxes.map((b) => `${b.getAttribute('data-run')} #${b.getAttribute('data-span')}`),
        ),
    ).toEqual(
      detail.compactions
        .filter((c) => c.run !== null && c.span !== null)
        .slice(0, 5)
        .map((c) => `${c.run} #${c.span}`),
    );
    expect(await evicted.textContent()).toContain(MARKUP);
    expect(await page.locator('#session-spans img').count()).toBe(0);
    expect(await page.evaluate('window.pwned ?? null')).toBeNull();
    // The span read carries its log's proof bundle (issue 29), shown as text beside it. The planted span is the
    // session's first, committed by the time the 25 turns were answered.
    await page
      .locator('#session-spans .span', { hasText: PLANTED })
      .locator('pre.proof', { hasText: 'c2sp.org/tlog-proof' })
      .waitFor({ state: 'attached' });

    // The hand-off, where the sidecar serves one for the session: linked from its page, and shown as text.
    await page.click('#handoff-open');
    const handoff = page.locator('#handoff-text', { hasText: PLANTED });
    await handoff.waitFor();
    expect(await handoff.textContent()).toMatch(
      /^# Context Guardian hand-off\n\n## Goal\n.*PLANTED-QZX-4471/,
    );
    expect(await page.locator('#session-panel img').count()).toBe(0);
    expect(await page.evaluate('window.pwned ?? null')).toBeNull();

    // The search box: the recall API's search over the archive finds the planted token in the span that holds it.
    const planted = page.locator('#session-spans .span', { hasText: PLANTED });
    const plantedAt = [await planted.getAttribute('data-run'), await planted.getAttribute('data-span')];
    expect(runs.has(plantedAt[0] ?? null)).toBe(true);
    await page.fill('#search-input', PLANTED);
    await page.press('#search-input', 'Enter');
    await page.locator('#search-results li', { hasText: PLANTED }).first().waitFor();
    const hits = await page
      .locator('#search-results li')
      .evaluateAll((lis) => lis.map((li) => [li.getAttribute('data-run'), li.getAttribute('data-span')]));
    expect(hits).toEqual([plantedAt]);

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

    // The README's tour: the sessions by name, with alice-1's page open down to the first text it evicted.
    await page.click('#handoff-open');
    await page.locator('#handoff-text').waitFor({ state: 'hidden' });
    await until(
      'every span read',
      async () => (await page.locator('#session-spans [aria-busy]').count()) === 0,
    );
    await screenshot(page, 'console.png', {
      clip: await boxBetween(page, '#sessions-view', '#session-spans .span'),
      docs: true,
    });
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
    await until(
      'every span read',
      async () => (await page.locator('#session-spans [aria-busy]').count()) === 0,
    );
    await screenshot(page, 'console-phone.png', {
      clip: await boxBetween(page, '#session-panel', '#session-spans .span'),
      docs: true,
    });
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
    expect(await compactOnce({ baseURL: `${url}/v1` }, { tag: 'keyboard-refresh', session: 'alice-2' })).toBe(
      200,
    );
    await page.locator('#session-list button', { hasText: 'alice-2' }).waitFor();
    expect(await focused()).toBe(aliceId);
    await page.close();
  });

  it('is served under its own CSP: a fresh nonce per load, nothing else may run, eval refused', async () => {
    const url = restarted?.url ?? stack.guardian.url;
    const page = await browser.context.newPage();
    const nonces: string[] = [];
    for (let load = 0; load < 2; load++) {
      const res = await page.goto(`${url}/guardian/health`);
      const csp = cspDirectives(res?.headers()['content-security-policy']);
      const nonce = /^'nonce-([A-Za-z0-9+/=]{22,})'$/.exec(csp['script-src']?.join(' ') ?? '')?.[1] ?? '';
      expect(csp).toEqual({
        'default-src': ["'none'"],
        'script-src': [`'nonce-${nonce}'`],
        'style-src': [`'nonce-${nonce}'`],
        'connect-src': ["'self'"],
        'img-src': ["'self'", 'data:'],
        'base-uri': ["'none'"],
        'form-action': ["'none'"],
        'frame-ancestors': ["'none'"],
      });
      expect(res?.headers()['x-content-type-options']).toBe('nosniff');
      // The page's one script and one style carry that nonce (a browser hides the attribute, not the property).
      expect(
        await page.evaluate<string[]>(
          "Array.from(document.querySelectorAll('script, style'), (el) => el.tagName + ' ' + el.nonce)",
        ),
      ).toEqual([`STYLE ${nonce}`, `SCRIPT ${nonce}`]);
      nonces.push(nonce);
    }
    expect(nonces[0]).not.toBe(nonces[1]);
    await page.locator('#stream-status', { hasText: 'live' }).waitFor();
    // The browser enforces it: a script added without the nonce does not run, and one with it may not eval. Its eval
    // runs from a timer: inside a DevTools evaluation (page.evaluate) Chromium lets eval through whatever the CSP.
    const added = (withNonce: boolean, code: string) =>
      page.evaluate(
        `(() => { const s = document.createElement('script'); ${withNonce ? `s.nonce = ${JSON.stringify(nonces[1])};` : ''} s.textContent = ${JSON.stringify(code)}; document.body.append(s); })()`,
      );
    await added(false, 'window.injected = 1');
    await added(
      true,
      "setTimeout(() => { try { eval('1'); window.evaluated = 'ran'; } catch (e) { window.evaluated = e.name; } })",
    );
    await until(
      'the added script ran',
      async () => (await page.evaluate('window.evaluated ?? null')) !== null,
    );
    expect(await page.evaluate('[window.injected ?? null, window.evaluated]')).toEqual([null, 'EvalError']);
    await page.close();
  });

  it('is readable in a dark theme and a light one: every text shown meets WCAG AA contrast', async () => {
    const url = restarted?.url ?? stack.guardian.url;
    for (const scheme of ['dark', 'light'] as const) {
      const page = await open(url, { scheme });
      const name = page.locator('#session-list button', { hasText: 'alice-1' });
      await name.waitFor();
      // What the tour shows, all of it on screen: a session's page with its evicted text, a search, live events.
      await page.locator('#usage tr').first().waitFor();
      await page.locator('#events li').first().waitFor();
      await name.click();
      await page.locator('#session-spans pre', { hasText: PLANTED }).waitFor();
      await page.click('#handoff-open');
      await page.fill('#search-input', PLANTED);
      await page.press('#search-input', 'Enter');
      await page.locator('#search-results li').first().waitFor();
      const [fg, bg] = await page.evaluate<[string, string]>(
        '[getComputedStyle(document.body).color, getComputedStyle(document.body).backgroundColor]',
      );
      // The scheme took: dark text on a light page, or light text on a dark one.
      const light = (css: string) => (css.match(/\d+/g) ?? []).slice(0, 3).every((n) => Number(n) > 128);
      expect([scheme, light(fg), light(bg)]).toEqual([scheme, scheme === 'dark', scheme === 'light']);
      expect([scheme, await lowContrast(page)]).toEqual([scheme, []]);
      await screenshot(page, `console-${scheme}-full.png`);
      await page.close();
    }
  });

  it('lists alice-1 by name after a restart without Redis: the name is kept in its run.json', async () => {
    const url = await restart();
    expect((await json<{ memo_store: string }>(`${url}/guardian/stats`)).memo_store).toBe('memory');
    const alice = (await json<SessionsAnswer>(`${url}/guardian/sessions`)).sessions.find(
      (s) => s.name === 'alice-1',
    );
    // The new process has no usage record of it: the name comes from the volume, the figures from the log.
    expect(alice).toMatchObject({ turns: null, model: 'stub-model' });
    expect(alice?.compactions).toBeGreaterThan(0);
    expect((await json<SessionAnswer>(`${url}/guardian/sessions/${alice?.id}`)).name).toBe('alice-1');

    const page = await open(url);
    await page.locator('#session-list button', { hasText: 'alice-1' }).click();
    await page.locator('#session-name', { hasText: 'Session alice-1' }).waitFor();
    await page.locator('#session-spans pre', { hasText: PLANTED }).waitFor();
    await page.close();
  });
});
