/**
 * A headless Chromium for the browser tests, driven by playwright-core: the one the npm package
 * `@sparticuz/chromium` ships (brotli'd inside the package, unpacked by its `executablePath()`
 * into the temp dir on first use), else Debian's /usr/bin/chromium. Neither: the error says what
 * to install. Each launch gets a fresh profile (playwright-core makes a temp --user-data-dir).
 *
 * Not protected against: a binary already planted at `$TMPDIR/chromium` (the package reuses it).
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const SYSTEM_CHROMIUM = '/usr/bin/chromium';

const ARGS = [
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

export interface LaunchedBrowser {
  browser: Browser;
  /** Which binary: 'npm @sparticuz/chromium' or 'system /usr/bin/chromium'. */
  source: string;
  executablePath: string;
}

function launch(executablePath: string): Promise<Browser> {
  const root = process.getuid?.() === 0;
  // Chromium's own sandbox cannot start as root; `chromiumSandbox: false` passes --no-sandbox.
  return chromium.launch({ executablePath, headless: true, chromiumSandbox: !root, timeout: 60_000, args: ARGS });
}

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e)).split('\n').slice(0, 6).join('\n');

/** Launches the npm Chromium, falling back to the system one; throws naming both failures. */
export async function launchChromium(): Promise<LaunchedBrowser> {
  const failures: string[] = [];
  try {
    const pkg = (await import('@sparticuz/chromium')).default;
    const executablePath = await pkg.executablePath();
    return { browser: await launch(executablePath), source: 'npm @sparticuz/chromium', executablePath };
  } catch (e) {
    failures.push(`npm @sparticuz/chromium: ${message(e)}`);
  }
  if (existsSync(SYSTEM_CHROMIUM)) {
    try {
      return { browser: await launch(SYSTEM_CHROMIUM), source: `system ${SYSTEM_CHROMIUM}`, executablePath: SYSTEM_CHROMIUM };
    } catch (e) {
      failures.push(`${SYSTEM_CHROMIUM}: ${message(e)}`);
    }
  } else {
    failures.push(`${SYSTEM_CHROMIUM}: not installed`);
  }
  throw new Error(
    `no Chromium could start. Run \`npm ci\` (devDependency @sparticuz/chromium) or apt-get install chromium.\n${failures.join('\n')}`,
  );
}
