// A template built in the dashboard's block editor and sent as a broadcast, in Debian's
// Chromium: a blank visual template, its heading edited, a button added and dragged above the
// heading, the preview in dark mode, publish, then a broadcast composed from the template to the
// segment "Readers", sent, and its progress watched until 100%; axe-core on each page.
// Screenshots go to HERALD_SCREENSHOTS.
//
// Environment:
//   HERALD_BASE_URL     a server with its workers running and a verified sending domain
//   HERALD_SESSION      a dashboard session cookie of an admin of the team
//   HERALD_FROM         the broadcast's From
//   HERALD_SCREENSHOTS  a directory for the screenshots
//   HERALD_CHROMIUM     the browser (default /usr/bin/chromium)

import { accessible, check, expect, need, run } from './dashboard_kit.mjs';

const BASE = need('HERALD_BASE_URL').replace(/\/$/, '');
const SHOTS = need('HERALD_SCREENSHOTS');
const FROM = need('HERALD_FROM');

await run(SHOTS, async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1800 } });
  await context.addCookies([{ name: 'herald_session', value: need('HERALD_SESSION'), url: BASE }]);
  const page = await context.newPage();
  const submit = async (button) => Promise.all([page.waitForNavigation(), page.click(button)]);
  const order = async () => page.$$eval('li.block summary b', (names) => names.map((n) => n.textContent));

  await check('a blank visual template is created from the templates page', async () => {
    await page.goto(`${BASE}/app/templates`);
    await page.fill('#nt-name', 'Spring news');
    await page.selectOption('#nt-starter', 'blank');
    await submit('form[action="/app/templates"] button[type=submit]');
    expect(/\/app\/templates\/[0-9a-f-]+$/.test(page.url()), page.url());
    expect((await order()).join(',') === 'Heading 1,Text 2', (await order()).join(','));
  });
  await accessible(page, 'the block editor');
  await check("the heading's text is edited in its block", async () => {
    await page.click('#block-0-0-0 summary');
    await page.fill('#b-0-0-0-text', 'Spring at Acme');
    await submit('#block-0-0-0 button[value=edit]');
    expect((await page.textContent('#block-0-0-0 summary')).includes('Spring at Acme'), await page.textContent('#block-0-0-0 summary'));
  });
  await check('a button block is added and filled in', async () => {
    await page.selectOption('#add-0-0', 'button');
    await submit('div[data-column="0.0"] button[value=add]');
    await page.click('#block-0-0-2 summary');
    await page.fill('#b-0-0-2-label', 'Read the news');
    await page.fill('#b-0-0-2-url', 'https://acme.example/news');
    await submit('#block-0-0-2 button[value=edit]');
    expect((await order()).join(',') === 'Heading 1,Text 2,Button 3', (await order()).join(','));
  });
  await check('the button dragged onto the heading takes its place', async () => {
    await Promise.all([page.waitForNavigation(), page.dragAndDrop('#block-0-0-2', '#block-0-0-0')]);
    expect((await order()).join(',') === 'Button 1,Heading 2,Text 3', (await order()).join(','));
    await page.frameLocator('iframe.preview').getByText('Read the news').waitFor();
    await page.screenshot({ path: `${SHOTS}/template-editor.png`, fullPage: true });
  });
  await check('the keyboard moves a block too (↓ then ↑)', async () => {
    await page.focus('#block-0-0-1 button[value=down]');
    await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]);
    expect((await order()).join(',') === 'Button 1,Text 2,Heading 3', (await order()).join(','));
    await submit('#block-0-0-2 button[value=up]');
    expect((await order()).join(',') === 'Button 1,Heading 2,Text 3', (await order()).join(','));
  });
  await check('the preview shows dark mode and the mobile width', async () => {
    await Promise.all([page.waitForNavigation(), page.click('a[href$="theme=dark"]')]);
    expect((await page.getAttribute('iframe.preview', 'src')).endsWith('/preview?theme=dark'), 'no dark preview');
    await Promise.all([page.waitForNavigation(), page.click('a[href*="width=mobile"]')]);
    expect(page.url().includes('width=mobile') && page.url().includes('theme=dark'), page.url());
    await page.frameLocator('iframe.preview').getByText('Spring at Acme').waitFor();
    await page.screenshot({ path: `${SHOTS}/template-dark.png`, fullPage: true });
  });
  await accessible(page, 'the dark mobile preview');
  await check('the template is published', async () => {
    await submit('form[action$="/publish"] button[type=submit]');
    expect(!(await page.$('form[action$="/publish"]')), 'still unpublished');
  });
  await check('a broadcast composed from the template is saved as a draft', async () => {
    await page.goto(`${BASE}/app/broadcasts`);
    await page.fill('#b-name', 'Spring news');
    await page.fill('#b-from', FROM);
    await page.fill('#b-subject', 'Spring at Acme, {{{FIRST_NAME|friend}}}');
    await page.selectOption('#b-segment', { label: 'Readers' });
    await page.selectOption('#b-template', { label: 'Spring news' });
    await submit('form[action="/app/broadcasts"] button[type=submit]');
    expect(/\/app\/broadcasts\/[0-9a-f-]+$/.test(page.url()), page.url());
  });
  await accessible(page, "the draft broadcast's checklist");
  await check("the broadcast's progress reaches 100%", async () => {
    await submit('form[action$="/send"] button[type=submit]');
    await page.waitForFunction(() => /100%/.test(document.querySelector('#progress p').textContent), null, { timeout: 60000 });
    expect(!(await page.getAttribute('#progress', 'hx-trigger')), 'a finished fan-out still asks');
    await page.screenshot({ path: `${SHOTS}/broadcast-sent.png`, fullPage: true });
  });
  await check('the brand kit page lists nothing saved yet and keeps a colour', async () => {
    await page.goto(`${BASE}/app/brand`);
    await page.fill('#brand-primary_color', '#1A73E8');
    await submit('form[action="/app/brand"] button[type=submit]');
    expect((await page.inputValue('#brand-primary_color')) === '#1A73E8', 'colour not kept');
  });
  await accessible(page, 'the brand kit');
});
