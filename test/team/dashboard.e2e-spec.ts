import { sessionHash } from '@guardian/archive';

import { openChromium } from '../dashboard/support';
import { chatAs, startTeamStack, TOKENS, type TeamStack } from './support';

// Issue 15 item 4: the dashboard page (ADR 0006: it loads without a token and asks for one) works with a developer's
// token, and shows that developer's sessions and events only.

describe('/guardian/health with a developer token', () => {
  let stack: TeamStack;
  let browser: Awaited<ReturnType<typeof openChromium>>;

  beforeAll(async () => {
    stack = await startTeamStack();
    browser = await openChromium();
    expect((await chatAs(stack, 'bob', { session: 'desk', tag: 'dash-bob' })).status).toBe(200);
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it('shows alice her own sessions and compactions, none of bob’s', async () => {
    const page = await browser.context.newPage();
    await page.goto(`${stack.guardian.url}/guardian/health`);
    await page.locator('#token-panel').waitFor({ state: 'visible' });
    await page.fill('#token-input', TOKENS.alice);
    await page.click('#token-form button');
    await page.locator('#stream-status', { hasText: 'live' }).waitFor();
    await page.locator('#sessions-title', { hasText: 'your recent sessions (alice)' }).waitFor();
    expect(await page.locator('#no-sessions').isVisible()).toBe(true);

    // Alice compacts while her page is open: her row and her event arrive; bob's never do.
    expect((await chatAs(stack, 'alice', { session: 'laptop', tag: 'dash-alice' })).status).toBe(200);
    await page.locator('#events li[data-kind="compaction"]').first().waitFor();
    const mine = sessionHash('laptop', 'alice').slice(0, 8);
    await page.locator('#sessions tr td', { hasText: mine }).first().waitFor();
    expect(await page.locator('#sessions tr').count()).toBe(1);
    expect(await page.locator('#events li[data-kind="compaction"]').count()).toBe(1);
    expect(await page.content()).not.toContain(sessionHash('desk', 'bob').slice(0, 8));

    // The admin's page shows both.
    const admin = await browser.context.newPage();
    await admin.goto(`${stack.guardian.url}/guardian/health`);
    await admin.fill('#token-input', TOKENS.admin);
    await admin.click('#token-form button');
    await admin.locator('#sessions tr td', { hasText: sessionHash('desk', 'bob').slice(0, 8) }).waitFor();
    expect(await admin.locator('#sessions tr').count()).toBe(2);
    expect(await admin.locator('#sessions-title').textContent()).toBe('Window fill per recent session');
    await page.close();
    await admin.close();
  });
});
