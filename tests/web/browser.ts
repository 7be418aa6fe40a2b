import { before, after } from 'node:test';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from '@playwright/test';

/**
 * The browser side of the web tests: Debian's chromium driven by Playwright (its own browser downloads are not
 * reachable here), and a web build that is never older than web/ (so `npm test -- web` right after an edit tests
 * the edit, not yesterday's dist/web).
 */
export const chromiumPath = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
const args = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const root = new URL('../../', import.meta.url).pathname;
export const webBuildDir = join(root, 'dist/web');

/**
 * Builds the app unless dist/web was built from exactly the current sources (its `.source-hash`; mtimes cannot tell,
 * since other builds of this checkout may run at the same time and finish with older sources).
 */
export async function ensureWebBuild(): Promise<string> {
  const { sourceHash } = await import('../../web/source-hash.js');
  let built = '';
  try {
    built = readFileSync(join(webBuildDir, '.source-hash'), 'utf8');
  } catch {
    // never built, or built before the hash existed
  }
  const index = join(webBuildDir, 'index.html');
  if (existsSync(index) && built === sourceHash(root)) return readFileSync(index, 'utf8');
  const { build } = await import('vite');
  // Vite keeps a NODE_ENV it finds (the test runner sets `test`), which would bundle React's development build.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({ configFile: join(root, 'web/vite.config.ts'), logLevel: 'warn', mode: 'production' });
  } finally {
    process.env.NODE_ENV = nodeEnv;
  }
  return readFileSync(index, 'utf8');
}

export interface BrowserSuite {
  browser: Browser;
  /** Fails loudly when the server holds another build than the suite's (another build of this checkout ran between). */
  checkServed(url: string): Promise<void>;
  /** A fresh context (its own cookies) with a page; console errors and CSP reports are collected in `problems`. */
  open(
    width?: number,
    height?: number,
    colorScheme?: 'light' | 'dark',
  ): Promise<{ context: BrowserContext; page: Page; problems: string[] }>;
  /** The error with what the page showed when it happened, so a failure under load can be read from the log. */
  explain(page: Page, err: unknown): Promise<Error>;
}

/**
 * Registers hooks that launch chromium for the suite. `index` is what `ensureWebBuild` answered: call that with a
 * top-level await before the server is set up, since root-level hooks of node:test do not wait for one another.
 */
export function browserSuite(index: string): BrowserSuite {
  const s = {} as BrowserSuite;
  before(async () => {
    if (!existsSync(chromiumPath)) {
      throw new Error(
        `chromium is missing at ${chromiumPath}: the web app's browser tests need Debian's chromium package (scripts/prepare-host.sh installs it; or set SVC_CHROMIUM)`,
      );
    }
    s.browser = await chromium.launch({ executablePath: chromiumPath, args });
  });
  after(async () => s.browser?.close());
  s.open = async (width = 1280, height = 860, colorScheme = 'light') => {
    const context = await s.browser.newContext({ viewport: { width, height }, colorScheme });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    const problems: string[] = [];
    page.on('console', (m) => {
      // The browser logs every refused fetch; the API's 400/401/404 answers are part of the flows the tests drive
      // (and shown on the page, where the tests look for them).
      if (m.type() === 'error' && !/status of 40[014]/.test(m.text())) problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    return { context, page, problems };
  };
  s.checkServed = async (url) => {
    const served = await (await fetch(`${url}/`)).text();
    if (served !== index)
      throw new Error(
        'the server loaded another web build than the one of the current sources: a concurrent `npm run build` rewrote dist/web while the suite started; run the suite again',
      );
  };
  s.explain = async (page, err) => {
    const shown = await page
      .locator('body')
      .innerText({ timeout: 2000 })
      .catch(() => '(page unreadable)');
    const message = err instanceof Error ? err.message : String(err);
    await page.screenshot({ path: screenshotPath('failure') }).catch(() => undefined);
    // A new error: the reporter prints the stack, which holds the message as it was when the error was made.
    return new Error(`${message}\n--- page ${page.url()} showed:\n${shown.slice(0, 3000)}`, { cause: err });
  };
  return s;
}

/** Where screenshots of the main pages go for review: test-results/screenshots, which .gitignore keeps out. */
export function screenshotPath(name: string): string {
  const dir = join(root, 'test-results', 'screenshots');
  mkdirSync(dir, { recursive: true });
  return join(dir, `${name}.png`);
}
