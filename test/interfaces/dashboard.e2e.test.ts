// The web dashboard end to end, in headless Chromium (npm @sparticuz/chromium, else Debian's:
// test/helpers/browser.ts) driven by playwright-core, against a real `membrane serve` on
// 127.0.0.1: sign in with a token, see the tenant and the ladder, run a snippet, see a refused
// capability appear live in the denials (from the SSE stream), see an instance started through the
// API appear in the live list, and see hostile guest output shown as text. Leaves
// test-artifacts/dashboard.png.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.ts';
import { BIN, runCli } from '../helpers/cli.ts';
import { wat } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));
/** Bounds: the server's first line (it may rebuild dist/ first), one UI step, a snippet run. */
const SERVER_START_MS = 90_000;
const STEP_MS = 15_000;
const RUN_MS = 60_000;
const HOSTILE = '<img src=x onerror=alert(1)>';

/** Spawn `membrane serve --port 0` and read the URL from its first stdout line. */
async function startServe(env: Record<string, string>): Promise<{ proc: ChildProcess; url: string; stderr: () => string }> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-20_000)));
  const first = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`membrane serve printed nothing in ${SERVER_START_MS} ms\n${stderr}`)), SERVER_START_MS);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`membrane serve exited (${code}) before listening\n${stderr}`));
    });
    createInterface({ input: proc.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      resolve(line);
    });
  });
  const m = /^membrane serve: listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(first);
  assert.ok(m, `unexpected first line from membrane serve: ${first}`);
  return { proc, url: m[1]!, stderr: () => stderr };
}

function stopServe(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    proc.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    proc.kill('SIGTERM');
  });
}

/** Wait until the element's text matches, or fail saying what it showed. */
async function waitText(page: Page, selector: string, pattern: RegExp, ms = STEP_MS): Promise<string> {
  try {
    await page.waitForFunction(
      ([sel, src, flags]) => new RegExp(src!, flags).test(document.querySelector(sel!)?.textContent ?? ''),
      [selector, pattern.source, pattern.flags],
      { timeout: ms },
    );
  } catch {
    const shown = await page.locator(selector).first().textContent({ timeout: 1000 }).catch(() => '(absent)');
    assert.fail(`${selector} never matched ${pattern} in ${ms} ms; it shows: ${shown}`);
  }
  return (await page.locator(selector).first().textContent()) ?? '';
}

async function runSnippet(page: Page, code: string, caps: string): Promise<void> {
  await page.getByLabel('Language').selectOption('js');
  await page.getByLabel(/^Capability subset/).fill(caps);
  await page.getByLabel(/^Code/).fill(code);
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  // The summary leaves "Running…" when the answer is shown.
  await page.waitForFunction(() => !/Running/.test(document.getElementById('run-summary')?.textContent ?? 'Running'), undefined, { timeout: RUN_MS });
}

test('dashboard e2e in Chromium: sign in, ladder, run, live denial, live instance, hostile output as text', { timeout: 300_000 }, async (t) => {
  const home = tempDir('membrane-dashboard-e2e-');
  const env = { MEMBRANE_HOME: home, MEMBRANE_AUDIT_KEY: randomBytes(32).toString('hex') };
  const made = await runCli(['token', 'create', '--tenant', 'acme', '--profile', 'compute', '--json'], env);
  assert.equal(made.code, 0, made.stderr);
  const { token } = JSON.parse(made.stdout) as { token: string };
  assert.match(token, /^mbt_[A-Za-z0-9_-]{43}$/);

  let server: Awaited<ReturnType<typeof startServe>> | null = null;
  let browser: Browser | null = null;
  let page: Page | null = null;
  mkdirSync(ARTIFACTS, { recursive: true });
  try {
    server = await startServe(env);
    const { url } = server;

    // The server sends the dashboard's security headers.
    const index = await fetch(`${url}/`);
    assert.equal(index.status, 200);
    assert.match(index.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/);
    assert.match(index.headers.get('content-security-policy') ?? '', /default-src 'self'.*frame-ancestors 'none'/);
    assert.equal(index.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(index.headers.get('referrer-policy'), 'no-referrer');

    const launched = await launchChromium();
    browser = launched.browser;
    t.diagnostic(`browser: ${launched.source} ${browser.version()} (${launched.executablePath})`);
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(STEP_MS);
    const problems: string[] = [];
    const dialogs: string[] = [];
    const urls: string[] = [];
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      // The browser logs every 4xx answer; the one NOT_CAPABLE exec below is expected.
      if (m.location().url.endsWith('/v1/exec') && /status of 403/.test(m.text())) return;
      problems.push(`console: ${m.text()} (${m.location().url})`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    page.on('request', (r) => urls.push(r.url()));

    await page.goto(`${url}/`, { timeout: STEP_MS });
    // Keyboard only: the token field has focus on load, Enter submits.
    await page.waitForFunction(() => document.activeElement?.id === 'token', undefined, { timeout: STEP_MS });
    await page.keyboard.type(token);
    await page.keyboard.press('Enter');

    // Whoami and the ladder, with the token's profile highlighted.
    await waitText(page, '#who-tenant', /^acme$/);
    await waitText(page, '#who-profile', /^compute$/);
    await waitText(page, '#ladder', /posix/);
    assert.deepEqual(await page.locator('#ladder .rung-name').allTextContents(), ['compute', 'minimal', 'network', 'posix']);
    assert.equal(await page.locator('#ladder li[aria-current="true"] .rung-name').textContent(), 'compute');
    await waitText(page, '#stream-state', /^live$/);

    // A snippet and its result.
    await runSnippet(page, '6*7', '');
    await waitText(page, '#run-summary', /^ok\b.*42/, 1000);
    assert.equal(await page.locator('#run-result').textContent(), '42');

    // A capability outside the grant: NOT_CAPABLE, and the denial arrives over the audit stream.
    assert.equal(await page.locator('#denials li[data-source="stream"]').count(), 0);
    await runSnippet(page, '1', 'net');
    await waitText(page, '#run-summary', /NOT_CAPABLE/, 1000);
    assert.equal(await page.locator('#run-error-code').textContent(), 'NOT_CAPABLE');
    const denial = await waitText(page, '#denials li[data-source="stream"]', /NOT_CAPABLE/);
    assert.match(denial, /net/);

    // An instance started through the API shows up in the live list, and its calls are counted.
    const bytes = await wat('noop');
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const started = await fetch(`${url}/v1/instances`, { method: 'POST', headers: auth, body: JSON.stringify({ id: 'e2e-counter', module: Buffer.from(bytes).toString('base64') }) });
    assert.equal(started.status, 201, await started.clone().text());
    const row = '#instances-body tr[data-id="e2e-counter"]';
    await waitText(page, row, /compute/);
    const called = await fetch(`${url}/v1/instances/e2e-counter/call`, { method: 'POST', headers: auth, body: JSON.stringify({ export: 'incr' }) });
    assert.equal(called.status, 200, await called.clone().text());
    await waitText(page, `${row} td:nth-child(4)`, /^1$/);

    // Hostile guest output is shown as text: no element made from it, no script run.
    await runSnippet(page, `console.log(${JSON.stringify(HOSTILE)}); ${JSON.stringify(HOSTILE)}`, '');
    await waitText(page, '#run-summary', /^ok\b/, 1000);
    assert.equal((await page.locator('#run-stdout').textContent())?.trim(), HOSTILE);
    assert.equal(await page.locator('#run-result').textContent(), HOSTILE);
    assert.equal(await page.locator('main img').count(), 0);
    await page.waitForTimeout(300);
    assert.deepEqual(dialogs, []);

    const shot = join(ARTIFACTS, 'dashboard.png');
    await page.screenshot({ path: shot, fullPage: true });
    t.diagnostic(`screenshot: ${shot}`);
    console.log(`dashboard screenshot: ${shot}`);

    // Narrow screens: one column, nothing wider than the viewport (the table scrolls in its box).
    await page.setViewportSize({ width: 360, height: 800 });
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'the page overflows a 360 px viewport');
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-narrow.png'), fullPage: true });

    // Signing out forgets the token; it never appeared in a URL.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API token').waitFor({ state: 'visible' });
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    assert.ok(urls.length > 0 && urls.every((u) => !u.includes(token)), 'the token appeared in a request URL');
    assert.deepEqual(problems, []);
  } catch (e) {
    if (page) await page.screenshot({ path: join(ARTIFACTS, 'dashboard-failure.png'), fullPage: true }).catch(() => {});
    if (server) t.diagnostic(`membrane serve stderr (tail):\n${server.stderr().slice(-4000)}`);
    throw e;
  } finally {
    await browser?.close().catch(() => {});
    if (server) await stopServe(server.proc);
    rmSync(home, { recursive: true, force: true });
  }
});
