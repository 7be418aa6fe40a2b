// The web app's budgets (docs/performance.md, "Web app budgets"), measured in Debian's chromium through Playwright against a
// real `svc serve` whose data was made through the API: initial JavaScript of the jobs page, the jobs page of 2,000
// jobs, and a run timeline of 10,000 entries opened and watched live.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium, type Browser, type Page, type Response } from '@playwright/test';
import { loadConfig } from '../app/config.js';
import { createLogger, startServer } from '../server/start.js';
import { summarize } from './stats.js';
import { cliArgs, waitForFile } from './served.js';

type Json = Record<string, any>;
const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
const chromiumPath = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';

/** The JavaScript the built index.html loads before any page code runs: its entry and what that imports statically. */
export function initialJavaScript(webDir = 'dist/web'): { files: string[]; gzipBytes: number; rawBytes: number } {
  const html = readFileSync(join(webDir, 'index.html'), 'utf8');
  const entries = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+\.js)"/g)].map((m) => m[1]!);
  const seen = new Set<string>();
  const queue = [...entries];
  while (queue.length > 0) {
    const file = queue.shift()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = readFileSync(join(webDir, file), 'utf8');
    // Static imports only (`import … from "./x.js"`, `import "./x.js"`); `import("./x.js")` is loaded on demand.
    for (const m of text.matchAll(/(?:^|[;\s}])import\s*(?:[^"'()]*?from\s*)?["'](\.\/[^"']+\.js)["']/g))
      queue.push(`/assets/${m[1]!.slice(2)}`);
  }
  let gzipBytes = 0;
  let rawBytes = 0;
  for (const file of seen) {
    const body = readFileSync(join(webDir, file));
    rawBytes += body.length;
    gzipBytes += gzipSync(body, { level: 6 }).length;
  }
  return { files: [...seen], gzipBytes, rawBytes };
}

async function until<T>(what: string, check: () => Promise<T | false>, ms = 600_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A `svc serve` of its own, with two sign-in links issued before it starts (one for the API calls, one for the browser). */
async function serve(dataDir: string) {
  const seeded = await startServer(
    loadConfig({ port: 0, dataDir }, { NODE_ENV: 'test' }),
    createLogger('silent'),
    () => {},
  );
  const links = [
    await seeded.services.identity.issueSignInLink('bench@example.com'),
    await seeded.services.identity.issueSignInLink('bench@example.com'),
  ];
  await seeded.close();
  const child = spawn(process.execPath, [...cliArgs, 'serve', '--port', '0', '--data-dir', dataDir], {
    stdio: 'ignore',
    env: { ...process.env, SVC_LOG_LEVEL: 'warn', NODE_ENV: 'test' },
  });
  await waitForFile(join(dataDir, 'server.json'), child);
  const { url } = JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')) as { url: string };
  const cookieOf = async (link: string) => {
    const answer = await fetch(url + link, { redirect: 'manual' });
    return /svc_session=([^;]+)/.exec(answer.headers.get('set-cookie') ?? '')![1]!;
  };
  const cookie = await cookieOf(links[0]!);
  const call = async (method: string, path: string, body?: unknown): Promise<Json> => {
    const res = await fetch(url + path, {
      method,
      headers: {
        cookie: `svc_session=${cookie}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as Json;
    if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  return { child, url, call, browserCookie: await cookieOf(links[1]!) };
}

/** Frame gaps and long tasks in the page while `during` runs (what "smooth" means below). */
async function watchFrames(page: Page, during: () => Promise<void>) {
  // Strings: the page's code runs in the browser, and this project's Node types hold no DOM.
  await page.evaluate(`(() => {
    window.__frames = [];
    window.__long = [];
    window.__stop = false;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.__long.push(e.duration);
    }).observe({ type: 'longtask' });
    let last = performance.now();
    const tick = (now) => {
      window.__frames.push(now - last);
      last = now;
      if (!window.__stop) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  })()`);
  await during();
  const { frames, long } = await page.evaluate<{ frames: number[]; long: number[] }>(
    `(() => { window.__stop = true; return { frames: window.__frames.slice(1), long: window.__long }; })()`,
  );
  return {
    frames: frames.length,
    frameMs: summarize(frames),
    framesOver50Ms: frames.filter((f) => f > 50).length,
    longTasks: long.length,
    longestTaskMs: Math.round(Math.max(0, ...long)),
  };
}

async function jobsPage(browser: Browser, url: string, cookie: string, jobs: number) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.addCookies([{ name: 'svc_session', value: cookie, url }]);
  const page = await context.newPage();
  const scripts: Response[] = [];
  const onResponse = (r: Response) => {
    if (r.request().resourceType() === 'script') scripts.push(r);
  };
  page.on('response', onResponse);
  const samples = {
    interactiveMs: [] as number[],
    sortClickMs: [] as number[],
    allFirstRowsMs: [] as number[],
    allLoadedMs: [] as number[],
    allScrollToEndMs: [] as number[],
  };
  for (let i = 0; i < 5; i++) {
    // Interactive: the first rows are on screen and a click on a sort header is answered by a re-sorted list.
    await page.goto(`${url}/jobs`);
    await page.locator('a.job-name').first().waitFor();
    samples.interactiveMs.push(await page.evaluate(() => performance.now()));
    page.off('response', onResponse);
    const t0 = await page.evaluate(() => performance.now());
    await page.getByRole('button', { name: 'Name' }).click();
    await page.locator('th[aria-sort="descending"]').waitFor();
    await page.locator('a.job-name').first().waitFor();
    samples.sortClickMs.push((await page.evaluate(() => performance.now())) - t0);

    // The whole list, virtualised: first rows, all pages in, and the last row reached with the End key.
    await page.goto(`${url}/jobs?pageSize=all`);
    await page.locator('a.job-name').first().waitFor();
    samples.allFirstRowsMs.push(await page.evaluate(() => performance.now()));
    await until(
      'all rows',
      async () =>
        (await page.getByRole('region', { name: `Jobs, ${jobs} rows; scroll for more` }).count()) > 0 &&
        (await page.locator('.spinner.small').count()) === 0,
    );
    samples.allLoadedMs.push(await page.evaluate(() => performance.now()));
    const t1 = await page.evaluate(() => performance.now());
    await page.getByRole('region', { name: /^Jobs, / }).focus();
    // End scrolls to the list's estimated end; rows measured on the way may move it, so End again as a person would.
    const lastRow = page.locator(`tr[aria-rowindex="${jobs + 1}"]`);
    for (let k = 0; k < 20 && (await lastRow.count()) === 0; k++) {
      await page.keyboard.press('End');
      await page.waitForTimeout(100);
    }
    await lastRow.locator('a.job-name').waitFor();
    samples.allScrollToEndMs.push((await page.evaluate(() => performance.now())) - t1);
  }
  let transferred = 0;
  for (const r of scripts) transferred += (await r.request().sizes()).responseBodySize;
  await context.close();
  return {
    jobs,
    // What the browser fetched as script for the first jobs page (gzip on the wire), beside the build's count.
    scriptsFetchedKb: Math.round(transferred / 102.4) / 10,
    interactiveMs: summarize(samples.interactiveMs),
    sortClickMs: summarize(samples.sortClickMs),
    allView: {
      firstRowsMs: summarize(samples.allFirstRowsMs),
      allRowsLoadedMs: summarize(samples.allLoadedMs),
      endKeyToLastRowMs: summarize(samples.allScrollToEndMs),
    },
  };
}

/**
 * The dashboard (`/`) once the workspace has runs: its figures (the overview route's totals) on screen, and the chart,
 * a chunk of its own fetched after the page's first paint.
 */
async function dashboardPage(browser: Browser, url: string, cookie: string) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.addCookies([{ name: 'svc_session', value: cookie, url }]);
  const page = await context.newPage();
  const samples = { figuresMs: [] as number[], chartMs: [] as number[] };
  for (let i = 0; i < 5; i++) {
    await page.goto(`${url}/?range=30d`);
    await page.getByRole('group', { name: 'Runs', exact: true }).waitFor({ timeout: 60_000 });
    samples.figuresMs.push(await page.evaluate(() => performance.now()));
    await page.locator('.overview-chart svg').waitFor({ timeout: 60_000 });
    samples.chartMs.push(await page.evaluate(() => performance.now()));
  }
  await context.close();
  return { figuresMs: summarize(samples.figuresMs), chartMs: summarize(samples.chartMs) };
}

/** How many entries the run's stored timeline holds, read page by page. */
async function storedEntries(call: (m: string, p: string) => Promise<unknown>, runId: string): Promise<number> {
  let entries = 0;
  for (let after = 0; ;) {
    const page = (await call('GET', `/api/runs/${runId}/events?after=${after}&limit=2000`)) as unknown as Array<{
      seq: number;
    }>;
    entries += page.length;
    if (page.length < 2000) return entries;
    after = page[page.length - 1]!.seq;
  }
}

const notesTurn = (n: number, size = 100) => ({
  toolCalls: Array.from({ length: size }, (_, i) => ({ name: 'remember', args: { note: `note ${n}.${i}` } })),
});

async function timeline(
  browser: Browser,
  url: string,
  cookie: string,
  call: (m: string, p: string, b?: unknown) => Promise<Json>,
  target: number,
) {
  const provider = (await call('GET', '/api/providers')).items[0].id as string;
  const job = (
    await call('POST', '/api/jobs', {
      name: 'Long timeline',
      instruction: 'x',
      selfImprove: false,
      limits: { maxTurns: 1000 },
    })
  ).id as string;
  // Each turn: one model call, 100 tool calls and their 100 results.
  const turns = Math.ceil(target / 201);
  await call('POST', `/api/providers/${provider}/script`, {
    reset: true,
    responses: [
      ...Array.from({ length: turns }, (_, i) => notesTurn(i)),
      { toolCalls: [{ name: 'finish', args: { status: 'success', summary: 'done' } }] },
    ],
  });
  const runId = (await call('POST', `/api/jobs/${job}/runs`, {})).runId as string;
  const run = await until('the long run to end', async () => {
    const r = await call('GET', `/api/runs/${runId}`);
    return ['queued', 'provisioning', 'running', 'verifying'].includes(r.status as string) ? false : r;
  });
  if (run.status !== 'succeeded') throw new Error(`the long run ended ${run.status}: ${run.error}`);
  const entries = await storedEntries(call, runId);
  log(`a finished run of ${entries} entries`);

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.addCookies([{ name: 'svc_session', value: cookie, url }]);
  const page = await context.newPage();
  const open = { firstEntryMs: [] as number[], allEntriesMs: [] as number[], endMs: [] as number[] };
  let scrolling: Awaited<ReturnType<typeof watchFrames>> | null = null;
  for (let i = 0; i < 5; i++) {
    await page.goto(`${url}/runs/${runId}`);
    await page.locator('.entry[data-seq="1"]').waitFor();
    open.firstEntryMs.push(await page.evaluate(() => performance.now()));
    await page
      .getByRole('status')
      .filter({ hasText: `${entries} entries` })
      .waitFor({ timeout: 60_000 });
    open.allEntriesMs.push(await page.evaluate(() => performance.now()));
    const t0 = await page.evaluate(() => performance.now());
    await page.getByRole('button', { name: 'Jump to end' }).click();
    await page.locator(`.entry[aria-posinset="${entries}"]`).waitFor();
    open.endMs.push((await page.evaluate(() => performance.now())) - t0);
    if (i === 4) {
      // Scrolling back through the whole run with the wheel.
      await page.getByRole('region', { name: /^Timeline, / }).hover();
      scrolling = await watchFrames(page, async () => {
        for (let k = 0; k < 60; k++) await page.mouse.wheel(0, -1500);
      });
    }
  }

  // Live: a run of the same size whose turns come every 100 ms, watched from its start while it runs.
  await call('POST', `/api/providers/${provider}/script`, {
    reset: true,
    responses: [
      ...Array.from({ length: turns }, (_, i) => ({ ...notesTurn(i), delayMs: 100 })),
      { toolCalls: [{ name: 'finish', args: { status: 'success', summary: 'done' } }] },
    ],
  });
  const liveId = (await call('POST', `/api/jobs/${job}/runs`, {})).runId as string;
  await page.goto(`${url}/runs/${liveId}`);
  await page.locator('.entry').first().waitFor({ timeout: 60_000 });
  const arrived = { from: 0, to: 0 };
  const count = async () =>
    Number(
      /(\d+) entr/.exec((await page.getByRole('status').filter({ hasText: /entr/ }).textContent()) ?? '')?.[1] ?? 0,
    );
  arrived.from = await count();
  const region = page.getByRole('region', { name: /^Timeline, / });
  await region.hover();
  const t0 = Date.now();
  const live = await watchFrames(page, async () => {
    // Watching for a few seconds, then scrolling up and down through what arrived while more arrives.
    while (Date.now() - t0 < 3000) await page.waitForTimeout(250);
    for (let k = 0; k < 20; k++) await page.mouse.wheel(0, k % 2 === 0 ? -2000 : 1500);
  });
  arrived.to = await count();
  const liveMs = Date.now() - t0;
  await until('the live run to end', async () => {
    const r = await call('GET', `/api/runs/${liveId}`);
    return ['queued', 'provisioning', 'running', 'verifying'].includes(r.status as string) ? false : r;
  });
  await page.locator('h1 .badge', { hasText: 'succeeded' }).waitFor({ timeout: 120_000 });
  const finalShown = await count();
  const stored = await storedEntries(call, liveId);
  await context.close();
  return {
    entries,
    open: {
      firstEntryMs: summarize(open.firstEntryMs),
      allEntriesLoadedMs: summarize(open.allEntriesMs),
      jumpToEndMs: summarize(open.endMs),
    },
    scrollingFinished: scrolling,
    live: {
      watchedMs: liveMs,
      entriesArrivedWhileWatched: arrived.to - arrived.from,
      entriesPerSec: Math.round(((arrived.to - arrived.from) / liveMs) * 1000),
      ...live,
      entriesShownAtEnd: finalShown,
      storedAtEnd: stored,
    },
  };
}

/** The web step of `npm run bench` (`--only web`). */
export async function webBenchmarks(root: string, quick: boolean) {
  if (!existsSync(chromiumPath)) return { skipped: `no chromium at ${chromiumPath}` };
  if (!existsSync('dist/web/index.html')) return { skipped: 'no web build (npm run build)' };
  const initial = initialJavaScript();
  const server = await serve(join(root, 'web'));
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
  try {
    await server.call('POST', '/api/providers', { name: 'Fake', kind: 'fake' });
    const model = (await server.call('GET', '/api/models')).items[0];
    await server.call('PATCH', '/api/settings', { agentModelId: model.id });
    const jobs = 2000;
    for (let i = 0; i < jobs; i += 25)
      await Promise.all(
        Array.from({ length: Math.min(25, jobs - i) }, (_, k) =>
          server.call('POST', '/api/jobs', {
            name: `Job ${String(i + k).padStart(5, '0')}`,
            instruction: `instruction ${i + k}`,
            selfImprove: false,
          }),
        ),
      );
    log(`made ${jobs} jobs through the API`);
    const failed = (err: unknown) => ({ error: err instanceof Error ? err.message : String(err) });
    const list = await jobsPage(browser, server.url, server.browserCookie, jobs).catch(failed);
    const long = await timeline(browser, server.url, server.browserCookie, server.call, quick ? 4000 : 10_000).catch(
      failed,
    );
    // After the timeline step, whose runs give the overview something to count.
    const dashboard = await dashboardPage(browser, server.url, server.browserCookie).catch(failed);
    return {
      // The machine is shared: its load when the step ended, to read the timings against.
      loadAverage: loadavg().map((l) => Math.round(l * 10) / 10),
      initialJavaScript: {
        gzipKb: Math.round(initial.gzipBytes / 102.4) / 10,
        rawKb: Math.round(initial.rawBytes / 102.4) / 10,
        files: initial.files.length,
        // The charts (job and dashboard) are chunks loaded on demand, never part of the first load.
        chartsOnDemand: !initial.files.some((f) => /RunChart|OverviewChart/.test(f)),
      },
      jobsPage: list,
      timeline: long,
      dashboard,
    };
  } finally {
    await browser.close();
    server.child.kill('SIGKILL');
  }
}
