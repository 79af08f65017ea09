/**
 * The web dashboard's static assets, served by `membrane serve` at `/` and `/dashboard/<name>`.
 *
 * Owns: the mapping from a request path to one of a fixed set of files in
 * src/interfaces/http/dashboard/ and their content types. Invariant: only the paths in ASSETS are
 * ever served — a path is looked up in an allowlist map, never joined onto a directory, so no
 * request path (`..`, encoded slashes, absolute paths) can name another file. Files are read once
 * and cached for the life of the process.
 *
 * Does not protect against: what the page's own script does with a token the user types (it keeps
 * it in sessionStorage and sends it only in an Authorization header to this origin); a hostile
 * browser extension; an operator serving the dashboard over plain HTTP on a shared network. The
 * security headers (Content-Security-Policy and friends) are the server's to send: see
 * DASHBOARD_HEADERS.
 */

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../storage/package-root.ts';

/** Request path → file name in the dashboard folder, and its content type. The whole surface. */
const ASSETS: ReadonlyMap<string, { readonly file: string; readonly type: string }> = new Map([
  ['/', { file: 'index.html', type: 'text/html; charset=utf-8' }],
  ['/dashboard/app.js', { file: 'app.js', type: 'text/javascript; charset=utf-8' }],
  ['/dashboard/app.css', { file: 'app.css', type: 'text/css; charset=utf-8' }],
  ['/dashboard/favicon.svg', { file: 'favicon.svg', type: 'image/svg+xml; charset=utf-8' }],
]);

/**
 * Headers the server should send with every dashboard asset: scripts and styles only from this
 * origin and never inline, no framing (clickjacking), no content sniffing, no referrer (the page
 * never puts a token in a URL, and sends nothing about itself elsewhere).
 */
export const DASHBOARD_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-cache',
});

const cache = new Map<string, Buffer>();

/** The folder holding the asset files: the sources in a checkout, dist/dashboard in the built package. */
function assetDir(): string {
  const root = packageRoot();
  const source = join(root, 'src', 'interfaces', 'http', 'dashboard');
  return existsSync(source) ? source : join(root, 'dist', 'dashboard');
}

/** The asset for a request path, or null when the path is not one of the dashboard's. */
export function dashboardAsset(pathname: string): { body: Buffer; type: string } | null {
  const asset = ASSETS.get(pathname);
  if (!asset) return null;
  let body = cache.get(asset.file);
  if (!body) {
    body = readFileSync(join(assetDir(), asset.file));
    cache.set(asset.file, body);
  }
  return { body, type: asset.type };
}
