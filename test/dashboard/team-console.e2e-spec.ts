import type { Page } from 'playwright-core';

import { sessionHash } from '@guardian/archive';
import type { HistoryAnswer, UsageSummaryAnswer } from '@guardian/client';

import type { CliIo } from '../../apps/cli/src/common/cli-io';
import { main as recall } from '../../apps/cli/src/recall/main';
import { until } from '../support/wait';
import { chatAs, startTeamStack, TOKENS, type TeamStack, type Who } from '../team/support';
import { openChromium } from './support';

// Issue 31 in team mode (its Done-when: the Chromium tests in test/dashboard): a developer's console shows their own
// sessions, usage and spans, none of another's; the admin's shows each developer's 24 h totals, and they equal
// `context-guardian-recall --savings` run with that developer's token through the sidecar, to the token. The team
// stack (tokens file, developers) is test/team's.

const ALICE_MARK = 'ALICE-SECRET-5521';
const BOB_MARK = 'BOB-OKAPI-8803';
/** The sidecar and the CLI price by the same settings, so the spend is compared too. */
const PRICES = { GUARDIAN_COST_PER_1M_INPUT_USD: '3', GUARDIAN_COST_PER_1M_OUTPUT_USD: '15' };

async function savingsAs(stack: TeamStack, who: Who): Promise<Record<string, number>> {
  let out = '';
  const io: CliIo = {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: () => undefined, isTTY: false },
    env: {
      GUARDIAN_URL: stack.guardian.url,
      GUARDIAN_TOKEN: TOKENS[who],
      GUARDIAN_DATA_DIR: '/nonexistent',
      ...PRICES,
    },
    home: '/nonexistent-home',
    now: () => new Date(),
  };
  expect(await recall(['--savings', '--since', '24h', '--json'], io)).toBe(0);
  return JSON.parse(out) as Record<string, number>;
}

describe('the console with two developers and an admin', () => {
  let stack: TeamStack;
  let browser: Awaited<ReturnType<typeof openChromium>>;

  beforeAll(async () => {
    stack = await startTeamStack(PRICES);
    browser = await openChromium();
    for (const [who, session, tag, marker] of [
      ['alice', 'alice-1', 'console-a1', ALICE_MARK],
      ['alice', 'alice-2', 'console-a2', ALICE_MARK],
      ['bob', 'bob-1', 'console-b1', BOB_MARK],
    ] as const) {
      expect((await chatAs(stack, who, { session, tag, marker })).status).toBe(200);
    }
    // Three compactions decided; the page is opened once their three log lines are on the volume.
    await until('three compactions in the log', async () => {
      const s = (await stack.get('/guardian/usage/summary', 'admin')).body as UsageSummaryAnswer;
      return s.periods?.['24h'].total.compactions === 3;
    });
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  async function pageAs(who: Who): Promise<Page> {
    const page = await browser.context.newPage();
    await page.goto(`${stack.guardian.url}/guardian/health`);
    await page.locator('#token-panel').waitFor({ state: 'visible' });
    await page.fill('#token-input', TOKENS[who]);
    await page.click('#token-form button');
    await page.locator('#stream-status', { hasText: 'live' }).waitFor();
    return page;
  }

  it("bob's token sees none of alice's sessions, usage or spans in the page", async () => {
    const page = await pageAs('bob');
    await page.locator('#session-list button', { hasText: 'bob-1' }).waitFor();
    await page.locator('#usage tr[data-owner="bob"]').first().waitFor();
    expect(await page.locator('#session-list tr').count()).toBe(1);
    expect(
      await page.locator('#usage tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-owner'))),
    ).toEqual(expect.arrayContaining(['bob']));
    expect(await page.locator('#usage tr[data-owner="alice"]').count()).toBe(0);
    // His own row is his own figures, as recall --savings gives them with his token.
    const bobCli = await savingsAs(stack, 'bob');
    const bobRow = page.locator('#usage tr[data-owner="bob"][data-model="all models"]');
    for (const field of ['tokens_kept_out', 'tokens_in', 'tokens_out'] as const)
      expect([field, await bobRow.locator(`td[data-field="${field}"]`).textContent()]).toEqual([
        field,
        bobCli[field]?.toLocaleString('en-US'),
      ]);

    await page.fill('#search-input', ALICE_MARK);
    await page.press('#search-input', 'Enter');
    await page.locator('#search-status', { hasText: '0 found' }).waitFor();
    expect(await page.locator('#search-results li').count()).toBe(0);
    // His own planted word is found, so the empty answer above is the scope, not a broken search.
    await page.fill('#search-input', BOB_MARK);
    await page.press('#search-input', 'Enter');
    await page.locator('#search-results li', { hasText: BOB_MARK }).first().waitFor();

    const html = await page.content();
    for (const leak of ['alice-1', 'alice-2', ALICE_MARK, sessionHash('alice-1', 'alice').slice(0, 8)])
      expect([leak, html.includes(leak)]).toEqual([leak, false]);
    await page.close();

    // The endpoints behind the page answer the same way: alice's session is missing for bob.
    const aliceId = sessionHash('alice-1', 'alice');
    expect((await stack.get(`/guardian/sessions/${aliceId}`, 'bob')).status).toBe(404);
    expect((await stack.get(`/guardian/sessions/${aliceId}`, 'alice')).status).toBe(200);
    const total = async (who: Who) =>
      ((await stack.get('/guardian/history?minutes=60', who)).body as HistoryAnswer).buckets.reduce(
        (n, b) => n + b.compactions,
        0,
      );
    expect([await total('bob'), await total('alice'), await total('admin')]).toEqual([1, 2, 3]);
    const bobs = (await stack.get('/guardian/usage/summary', 'bob')).body as UsageSummaryAnswer;
    expect(bobs.periods['7d'].developers.map((d) => d.owner)).toEqual(['bob']);
  });

  it("shows each developer's 24 h totals in the page and the endpoint, equal to recall --savings", async () => {
    const admin = (await stack.get('/guardian/usage/summary', 'admin')).body as UsageSummaryAnswer;
    const page = await pageAs('admin');
    for (const who of ['alice', 'bob'] as const) {
      const cli = await savingsAs(stack, who);
      const own = ((await stack.get('/guardian/usage/summary', who)).body as UsageSummaryAnswer).periods[
        '24h'
      ];
      const seen = admin.periods['24h'].developers.find((d) => d.owner === who);
      for (const totals of [own.total, seen?.totals]) {
        expect([
          who,
          totals?.compactions,
          totals?.tokens_before,
          totals?.tokens_after,
          totals?.tokens_kept_out,
          totals?.answers,
          totals?.tokens_in,
          totals?.tokens_out,
          totals?.summariser_tokens_in,
          totals?.summariser_tokens_out,
          totals?.cost_usd,
        ]).toEqual([
          who,
          cli.compactions,
          cli.tokens_before,
          cli.tokens_after,
          cli.tokens_kept_out,
          cli.answers,
          cli.tokens_in,
          cli.tokens_out,
          cli.summariser_tokens_in,
          cli.summariser_tokens_out,
          cli.cost_usd,
        ]);
        expect(totals?.tokens_out).toBeGreaterThan(0);
        expect(totals?.cost_usd).toBeGreaterThan(0);
      }
      expect(cli.tokens_kept_out).toBeGreaterThan(0);
      const row = page.locator(`#usage tr[data-owner="${who}"][data-model="all models"]`);
      await row
        .locator('td[data-field="tokens_kept_out"]', {
          hasText: cli.tokens_kept_out?.toLocaleString('en-US'),
        })
        .waitFor();
      expect(await row.locator('td[data-field="tokens_before"]').textContent()).toBe(
        cli.tokens_before?.toLocaleString('en-US'),
      );
      expect(await row.locator('td[data-field="compactions"]').textContent()).toBe(String(cli.compactions));
      expect(await row.locator('td[data-field="cost_usd"]').textContent()).toBe(
        `$${cli.cost_usd?.toFixed(2)}`,
      );
      // The backend's own usage: tokens out and the summariser's tokens, as --savings has them.
      for (const field of ['tokens_in', 'tokens_out', 'summariser_tokens_in', 'summariser_tokens_out'])
        expect([field, await row.locator(`td[data-field="${field}"]`).textContent()]).toEqual([
          field,
          cli[field]?.toLocaleString('en-US'),
        ]);
    }
    // The bounded Prometheus series say the same for the whole sidecar, with no owner in a label (docs/team.md).
    const text = await (await fetch(`${stack.guardian.url}/metrics`)).text();
    const all = admin.periods['24h'].total;
    const [a, b] = [await savingsAs(stack, 'alice'), await savingsAs(stack, 'bob')];
    expect(all.tokens_kept_out).toBe((a.tokens_kept_out ?? 0) + (b.tokens_kept_out ?? 0));
    expect(text).toContain(`guardian_usage_tokens{period="24h",kind="kept_out"} ${all.tokens_kept_out}\n`);
    expect(text).toContain(`guardian_usage_tokens{period="7d",kind="sent"} ${all.tokens_before}\n`);
    expect(text).toContain(`guardian_usage_compactions{period="24h"} 3\n`);
    for (const leak of [TOKENS.alice, 'alice', 'bob'])
      expect([leak, text.includes(leak)]).toEqual([leak, false]);
    // The admin sees both developers' sessions by name.
    await page.locator('#session-list button', { hasText: 'alice-2' }).waitFor();
    expect(await page.locator('#session-list tr').count()).toBe(3);
    await page.close();
  });
});
