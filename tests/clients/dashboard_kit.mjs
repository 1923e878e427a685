// What the dashboard's browser scripts share: one line per check (`ok ...` or `FAIL ...`),
// axe-core run in the page, and Debian's Chromium launched through playwright-core.

import { chromium } from 'playwright-core';
import { readFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';

export const need = (name) => {
  const value = process.env[name];
  if (!value) { console.error(`set ${name}`); process.exit(2); }
  return value;
};

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const failures = [];

export const expect = (condition, message) => { if (!condition) throw new Error(message); };

export async function check(name, fn) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (error) {
    console.log(`FAIL ${name}: ${error.message}`);
    failures.push(name);
  }
}

// axe-core in the page (evaluated over DevTools, which the page's content policy does not
// govern): no serious or critical violation.
export async function accessible(page, name) {
  await check(`axe-core finds no serious or critical violation on ${name}`, async () => {
    await page.evaluate(AXE);
    const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
    const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect(bad.length === 0, bad.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join('; ')}`).join(' | '));
  });
}

// Runs `body(browser)` in Chromium, then prints the count of failed checks and exits 1 when any.
export async function run(shots, body) {
  mkdirSync(shots, { recursive: true });
  const browser = await chromium.launch({ executablePath: process.env.HERALD_CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
  try {
    await body(browser);
  } finally {
    await browser.close();
  }
  console.log(`\n${failures.length} failed`);
  process.exit(failures.length ? 1 : 0);
}
