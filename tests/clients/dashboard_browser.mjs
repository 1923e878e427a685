// Drives the dashboard in Debian's Chromium with Playwright (playwright-core, no bundled
// browser) and checks every page with axe-core: sign in through the form, the overview, the
// emails list and one email's timeline, a domain's records, a CSV import, the segment builder's
// live count, a new API key; keyboard focus, 375 px width and dark mode. One line
// per check (`ok ...` or `FAIL ...`); exit 1 when any failed. Screenshots go to
// HERALD_SCREENSHOTS. The email should hold a remote image: its preview must refuse it.
//
// Environment:
//   HERALD_BASE_URL     the server
//   HERALD_EMAIL, HERALD_PASSWORD   an account whose current team holds the email
//   HERALD_EMAIL_ID     an email of that team
//   HERALD_SCREENSHOTS  a directory for the screenshots
//   HERALD_CHROMIUM     the browser (default /usr/bin/chromium)

import { accessible, check, expect, need, run } from './dashboard_kit.mjs';

const BASE = need('HERALD_BASE_URL').replace(/\/$/, '');
const EMAIL = need('HERALD_EMAIL');
const PASSWORD = need('HERALD_PASSWORD');
const EMAIL_ID = need('HERALD_EMAIL_ID');
const SHOTS = need('HERALD_SCREENSHOTS');

await run(SHOTS, async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const refused = [];
  page.on('console', (message) => { if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) refused.push(message.text()); });

  await check('the sign-in page', async () => {
    await page.goto(`${BASE}/app/login`);
    expect(await page.title() === 'Sign in · Herald', `title ${await page.title()}`);
  });
  await accessible(page, 'the sign-in page');
  await check('signing in through the form opens the overview', async () => {
    await page.fill('#email', EMAIL);
    await page.fill('#password', PASSWORD);
    await Promise.all([page.waitForURL(`${BASE}/app`), page.click('button[type=submit]')]);
    expect((await page.textContent('h1')) === 'Overview', 'no Overview heading');
    await page.screenshot({ path: `${SHOTS}/overview.png`, fullPage: true });
  });
  await accessible(page, 'the overview');
  await check('the first Tab reaches the skip link, visibly focused', async () => {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => ({ text: document.activeElement.textContent, left: document.activeElement.getBoundingClientRect().left }));
    expect(focused.text === 'Skip to content' && focused.left >= 0, JSON.stringify(focused));
  });
  await check('the emails list links to the email', async () => {
    await page.goto(`${BASE}/app/emails`);
    expect(await page.locator(`a[href="/app/emails/${EMAIL_ID}"]`).count() === 1, 'the email is not listed');
  });
  await accessible(page, 'the emails list');
  await check("an email's timeline and its sandboxed preview", async () => {
    await page.click(`a[href="/app/emails/${EMAIL_ID}"]`);
    await page.waitForURL(`${BASE}/app/emails/${EMAIL_ID}`);
    expect(await page.locator('ol.timeline li').count() >= 1, 'no timeline');
    const frame = page.frameLocator('iframe.preview');
    await frame.locator('body').waitFor();
    expect((await page.getAttribute('iframe.preview', 'sandbox')) === '', 'the frame is not fully sandboxed');
    await page.screenshot({ path: `${SHOTS}/email-timeline.png`, fullPage: true });
  });
  await accessible(page, "an email's page");
  await check('times show in the browser\'s zone with UTC on hover', async () => {
    const time = page.locator('time').first();
    expect(/UTC$/.test(await time.getAttribute('title')), 'no UTC title');
    expect(!/UTC$/.test(await time.textContent()), 'the text was not localised');
  });
  await check("a domain's records, each with a copy button", async () => {
    await page.goto(`${BASE}/app/domains`);
    await Promise.all([page.waitForURL(/\/app\/domains\/[0-9a-f-]+$/), page.locator('table a').first().click()]);
    expect(await page.locator('button[data-copy]').count() >= 2, 'no copy buttons');
    await page.screenshot({ path: `${SHOTS}/domain-records.png`, fullPage: true });
  });
  await accessible(page, "a domain's records");
  // Every other area's list, each checked by axe-core.
  const areas = [
    ['/app/broadcasts', 'Broadcasts'], ['/app/templates', 'Templates'], ['/app/contacts', 'Contacts'], ['/app/contacts/imports', 'Imports'],
    ['/app/segments', 'Segments'], ['/app/topics', 'Topics'], ['/app/automations', 'Automations'], ['/app/webhooks', 'Webhooks'],
    ['/app/api-keys', 'API keys'], ['/app/logs', 'Request logs'], ['/app/suppressions', 'Suppressions'], ['/app/inbox', 'Inbox'],
    ['/app/receiving', 'Received mail'], ['/app/brand', 'Brand kit'], ['/app/billing', 'Billing'], ['/app/migrations', 'Migrations and exports'],
    ['/app/account', 'Your account'],
  ];
  for (const [path, heading] of areas) {
    await check(`${path} opens`, async () => {
      const answer = await page.goto(`${BASE}${path}`);
      expect(answer.status() === 200, `status ${answer.status()}`);
      expect((await page.textContent('h1')) === heading, `heading ${await page.textContent('h1')}`);
    });
    await accessible(page, path);
  }
  await check('a CSV import: the bar fills by itself until it says 100%', async () => {
    await page.goto(`${BASE}/app/contacts/imports`);
    const rows = ['email,first_name'].concat(Array.from({ length: 500 }, (_, i) => `reader${i}@example.com,Reader ${i}`)).join('\n');
    await page.setInputFiles('#import-file', { name: 'readers.csv', mimeType: 'text/csv', buffer: Buffer.from(rows) });
    await Promise.all([page.waitForURL(/\/app\/contacts\/imports\/[0-9a-f-]+$/), page.click('form[action="/app/contacts/imports"] button[type=submit]')]);
    await page.waitForFunction(() => document.querySelector('#progress progress')?.value === 100, null, { timeout: 30000 });
    const said = await page.textContent('#progress');
    expect(/completed/.test(said) && /500 created/.test(said), said);
    await page.screenshot({ path: `${SHOTS}/import-done.png`, fullPage: true });
  });
  await accessible(page, "an import's progress");
  await check('the segment builder counts the contacts as the conditions are typed', async () => {
    await page.goto(`${BASE}/app/segments`);
    await page.fill('#field0', 'email');
    await page.selectOption('#op0', 'contains');
    await page.fill('#value0', 'reader1');
    await page.waitForFunction(() => /^111 /.test(document.querySelector('#segment-count')?.textContent || ''), null, { timeout: 10000 }).catch(() => {});
    const said = await page.textContent('#segment-count');
    expect(said === '111 contacts match now.', said);
    await page.fill('#segment-name', 'Readers one');
    await Promise.all([page.waitForURL(/\/app\/segments\/[0-9a-f-]+$/), page.click('form[action="/app/segments"] button[type=submit]')]);
    expect((await page.textContent('h1')) === 'Readers one', await page.textContent('h1'));
  });
  await accessible(page, 'a new segment');
  await check('a new API key: its token is shown once, with a copy button', async () => {
    await page.goto(`${BASE}/app/api-keys`);
    await page.fill('#api-keys-name', 'From the browser');
    await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST' && r.url() === `${BASE}/app/api-keys`), page.click('form[action="/app/api-keys"] button[type=submit]')]);
    await page.waitForSelector('code.value');
    expect((await page.textContent('h1')) === 'Your new key', await page.textContent('h1'));
    expect(/^rk_/.test(await page.textContent('code.value')), 'no token');
    await page.goto(`${BASE}/app/api-keys`);
    expect(!/rk_[A-Za-z0-9]{20,}/.test(await page.content()), 'the token shows again on the list');
  });
  await check('375 px wide: nothing scrolls sideways but the tables', async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    for (const path of ['/app', '/app/emails', `/app/emails/${EMAIL_ID}`, '/app/domains', ...areas.map(([p]) => p)]) {
      await page.goto(`${BASE}${path}`);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(width <= 375, `${path} is ${width} px wide`);
    }
    await page.screenshot({ path: `${SHOTS}/email-375.png`, fullPage: true });
  });
  await check('dark mode follows the system', async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.emulateMedia({ colorScheme: 'light' });
    await page.goto(`${BASE}/app`);
    const light = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    await page.emulateMedia({ colorScheme: 'dark' });
    const dark = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(light !== dark, `${light} in both`);
    await page.screenshot({ path: `${SHOTS}/overview-dark.png`, fullPage: true });
  });
  await accessible(page, 'the overview in dark mode');
  await check("the content policy refused only the email's remote image, in its preview", async () => {
    const others = refused.filter((text) => !/Loading the image 'https:\/\/[^']+' violates .*"img-src data:"/.test(text));
    expect(others.length === 0, others.join(' | '));
    expect(refused.length > 0, "the email's remote image was not refused");
  });
});
