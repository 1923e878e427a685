// A newcomer's first minutes in the dashboard, in Debian's Chromium: the sign-up form, the
// overview, a test email sent from it through the development sender, that email's timeline
// until it says delivered, and a domain of their own added and verified (the harness publishes
// its records in the test DNS server once it exists); axe-core on each page. Screenshots go to
// HERALD_SCREENSHOTS.
//
// Environment:
//   HERALD_BASE_URL     a server in development mode, with its workers running
//   HERALD_SCREENSHOTS  a directory for the screenshots
//   HERALD_DOMAIN       the domain to add
//   HERALD_CHROMIUM     the browser (default /usr/bin/chromium)

import { accessible, check, expect, need, run } from './dashboard_kit.mjs';

const BASE = need('HERALD_BASE_URL').replace(/\/$/, '');
const SHOTS = need('HERALD_SCREENSHOTS');
const DOMAIN = need('HERALD_DOMAIN');

await run(SHOTS, async (browser) => {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await check('the sign-in page leads to the sign-up form', async () => {
    await page.goto(`${BASE}/app/login`);
    await Promise.all([page.waitForURL(`${BASE}/app/signup`), page.click('a[href="/app/signup"]')]);
    expect(await page.title() === 'Create account · Herald', `title ${await page.title()}`);
  });
  await accessible(page, 'the sign-up form');
  await check('signing up opens the overview, signed in', async () => {
    await page.fill('#name', 'Nia');
    await page.fill('#email', 'nia@example.com');
    await page.fill('#password', 'correct horse battery');
    await Promise.all([page.waitForURL(`${BASE}/app`), page.click('form[action="/app/signup"] button[type=submit]')]);
    expect((await page.textContent('h1')) === 'Overview', 'no Overview heading');
    expect((await page.inputValue('#test-email-to')) === 'nia@example.com', 'the test email is not addressed to the newcomer');
    await page.screenshot({ path: `${SHOTS}/newcomer-overview.png`, fullPage: true });
  });
  await accessible(page, "a newcomer's overview");
  await check("a test email from the overview, then its timeline until it says delivered", async () => {
    await Promise.all([page.waitForURL(/\/app\/emails\/[0-9a-f-]+$/), page.click('form[action="/app/test-email"] button[type=submit]')]);
    const timeline = async () => page.textContent('section[aria-labelledby="timeline"]');
    for (let tries = 0; tries < 40 && !/delivered/.test(await timeline()); tries++) {
      await page.waitForTimeout(500);
      await page.reload();
    }
    expect(/delivered/.test(await timeline()), await timeline());
    await page.screenshot({ path: `${SHOTS}/first-email.png`, fullPage: true });
  });
  await accessible(page, 'the first email');
  await check('a domain added from the dashboard verifies once its records are published', async () => {
    await page.goto(`${BASE}/app/domains`);
    await page.fill('#domains-name', DOMAIN);
    await Promise.all([page.waitForURL(/\/app\/domains\/[0-9a-f-]+$/), page.click('form[action="/app/domains"] button[type=submit]')]);
    expect(await page.locator('button[data-copy]').count() >= 2, 'no records to copy');
    const status = async () => page.textContent('dl dd');
    for (let tries = 0; tries < 40 && (await status()) !== 'verified'; tries++) {
      await page.waitForTimeout(500);
      await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/verify')), page.click('form[action$="/verify"] button[type=submit]')]);
      await page.waitForLoadState('load');
    }
    expect((await status()) === 'verified', `status ${await status()}`);
    await page.screenshot({ path: `${SHOTS}/domain-verified.png`, fullPage: true });
  });
  await accessible(page, 'a verified domain');
  await check('the reset form', async () => {
    const answer = await page.goto(`${BASE}/app/reset`);
    expect(answer.status() === 200, `status ${answer.status()}`);
  });
  await accessible(page, 'the reset form');
});
