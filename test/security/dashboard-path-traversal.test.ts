// The dashboard's asset server: a request path is looked up in an allowlist, never joined onto a
// directory, so traversal and encoding tricks name nothing; the page itself never turns server or
// guest text into HTML and never puts the token where a URL or form submission could carry it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { DASHBOARD_HEADERS, dashboardAsset } from '../../src/interfaces/http/dashboard.ts';

const asset = (p: string) => readFileSync(new URL(`../../src/interfaces/http/dashboard/${p}`, import.meta.url), 'utf8');

test('dashboard: "/" and the allowlisted assets are served with a charset', () => {
  const index = dashboardAsset('/');
  assert.ok(index);
  assert.equal(index.type, 'text/html; charset=utf-8');
  assert.match(index.body.toString('utf8'), /<title>Membrane dashboard<\/title>/);
  assert.equal(dashboardAsset('/dashboard/app.js')?.type, 'text/javascript; charset=utf-8');
  assert.equal(dashboardAsset('/dashboard/app.css')?.type, 'text/css; charset=utf-8');
  assert.equal(dashboardAsset('/dashboard/favicon.svg')?.type, 'image/svg+xml; charset=utf-8');
  // Read once: the same buffer every time.
  assert.equal(dashboardAsset('/dashboard/app.js')?.body, dashboardAsset('/dashboard/app.js')?.body);
});

test('dashboard path traversal: ../, encoded and absolute paths name no file', () => {
  for (const p of [
    '/dashboard/../dashboard.ts',
    '/dashboard/../../../package.json',
    '/dashboard/..%2f..%2fpackage.json',
    '/dashboard/%2e%2e/dashboard.ts',
    '/dashboard/app.js/../../dashboard.ts',
    '/dashboard//app.js',
    '/dashboard/./app.js',
    '/dashboard/APP.JS',
    '/dashboard/app.js?x=1',
    '/dashboard/index.html',
    '/dashboard/',
    '/dashboard',
    '/etc/passwd',
    '//etc/passwd',
    '/dashboard/app.js\0.png',
    '/dashboard\\..\\dashboard.ts',
    '',
    '/index.html',
  ]) {
    assert.equal(dashboardAsset(p), null, p);
  }
});

test('dashboard CSP: same-origin only, no inline script, no framing, no sniffing, no referrer', () => {
  const csp = DASHBOARD_HEADERS['content-security-policy'] ?? '';
  assert.match(csp, /default-src 'self'/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
  assert.equal(DASHBOARD_HEADERS['x-content-type-options'], 'nosniff');
  assert.equal(DASHBOARD_HEADERS['referrer-policy'], 'no-referrer');
  // The page works under that policy: no inline script or style, nothing from another origin.
  const html = asset('index.html');
  assert.doesNotMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/);
  assert.doesNotMatch(html, /\sstyle=|\son[a-z]+=/i);
  assert.doesNotMatch(html + asset('app.js') + asset('app.css'), /https?:\/\//);
});

test('dashboard XSS: the script never parses server or guest text as HTML', () => {
  const js = asset('app.js');
  for (const sink of ['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'document.write', 'eval(', 'new Function', 'createContextualFragment', 'new EventSource']) {
    assert.ok(!js.includes(sink), `app.js uses ${sink}`);
  }
});

test('dashboard token leak: the token field is a password input with no name, kept only in sessionStorage', () => {
  const input = /<input id="token"[^>]*>/.exec(asset('index.html'))?.[0] ?? '';
  assert.match(input, /type="password"/);
  assert.doesNotMatch(input, /\sname=/);
  const js = asset('app.js');
  assert.ok(js.includes('sessionStorage') && !js.includes('localStorage') && !js.includes('document.cookie'));
  assert.doesNotMatch(js, /[?&]token=/);
});
