/**
 * A real browser for the product's pages: Debian's Chromium, headless, driven by
 * playwright-core (no browser download: `.ci/run` installs the package when it is missing).
 * Every request the page makes is recorded and any to another host is aborted, so a test can
 * assert that nothing left the machine; the screenshot is checked by counting its colours in
 * the same browser.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

export interface PageUnderTest {
  page: Page;
  /** Every URL the page asked for, in order. */
  requests: string[];
  /** Console errors and failed requests: CSP violations land here. */
  errors: string[];
}

export interface TestBrowser {
  open(allowedOrigin: string, options?: { ignoreHttpsErrors?: boolean }): Promise<PageUnderTest>;
  /** Screenshot into a temp dir; returns its size and the number of distinct colours in it. */
  screenshot(page: Page, name: string): Promise<{ bytes: number; colours: number; file: string }>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does it)`);
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  const shots = mkdtempSync(join(tmpdir(), 'portico-screens-'));
  return {
    async open(allowedOrigin, options = {}) {
      const context = await browser.newContext({
        viewport: { width: 1280, height: 900 },
        ignoreHTTPSErrors: options.ignoreHttpsErrors ?? false,
      });
      const page = await context.newPage();
      const requests: string[] = [];
      const errors: string[] = [];
      await page.route('**/*', async (route) => {
        const url = route.request().url();
        requests.push(url);
        if (new URL(url).origin === allowedOrigin) await route.continue();
        else await route.abort('blockedbyclient');
      });
      page.on('console', (message) => {
        if (message.type() === 'error') errors.push(message.text());
      });
      page.on('pageerror', (error) => errors.push(error.message));
      page.on('requestfailed', (request) => errors.push(`failed: ${request.url()}`));
      return { page, requests, errors };
    },
    async screenshot(page, name) {
      const png = await page.screenshot({ fullPage: true });
      const file = join(shots, `${name}.png`);
      writeFileSync(file, png);
      return { bytes: png.length, colours: await countColours(browser, png), file };
    },
    async close() {
      await browser.close();
      rmSync(shots, { recursive: true, force: true });
    },
  };
}

/**
 * Distinct colours of a PNG, decoded by the browser itself (from a data: URL, no network).
 * In-page code as text: the test project has no DOM types.
 */
const COUNT_COLOURS = `async (base64) => {
  const image = new Image();
  image.src = 'data:image/png;base64,' + base64;
  await image.decode();
  const canvas = document.createElement('canvas');
  canvas.width = image.width;
  canvas.height = image.height;
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  const { data } = context.getImageData(0, 0, image.width, image.height);
  const seen = new Set();
  for (let i = 0; i < data.length && seen.size <= 1000; i += 4) {
    seen.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
  }
  return seen.size;
}`;

async function countColours(browser: Browser, png: Buffer): Promise<number> {
  const page = await browser.newPage();
  try {
    return await page.evaluate<number>(`(${COUNT_COLOURS})(${JSON.stringify(png.toString('base64'))})`);
  } finally {
    await page.close();
  }
}
