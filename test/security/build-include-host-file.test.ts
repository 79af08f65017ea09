// Attack: make the in-sandbox compiler read a host file — `#include "/etc/passwd"`, a `..` chain
// out of the sources' directory, `#include </proc/self/environ>`, C23 `#embed "/etc/passwd"`, a
// climb out of the sysroot image — and have its contents echoed back in a diagnostic.
// Now: clang is a guest that sees only the build's VFS and the read-only /sysroot image: every
// attempt is BUILD_FAILED with "file not found" or "Capabilities insufficient", and nothing in the
// result names a host path or carries a byte of the host's /etc/passwd.
import assert from 'node:assert/strict';
import { readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { createEngine } from '../../src/index.ts';
import { TOOLCHAIN_CACHE } from '../helpers/toolchain.ts';
import type { BuildResult } from '../../src/build/build.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-home-');
process.env['MEMBRANE_HOME'] = HOME;
process.env['MEMBRANE_AUDIT_KEY'] = '6b'.repeat(32);
// The toolchain cache is shared by the test files that build (its one-time costs are not under test here).
const engine = createEngine({ poolSize: 2, cacheDir: TOOLCHAIN_CACHE });
after(() => engine.close());

/** Host strings that must never reach a result: the home, the repo, the toolchain package. */
const HOST_PATHS = [HOME, realpathSync(HOME), process.cwd(), dirname(createRequire(import.meta.url).resolve('@yowasp/clang')), 'node_modules', '.sqlite'];
/** A line of the host's real /etc/passwd (the guest must never see it). */
const PASSWD = (() => {
  try {
    return readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.includes(':')) ?? 'root:x:0:0:';
  } catch {
    return 'root:x:0:0:';
  }
})();

function everything(r: BuildResult): string {
  return [r.stdout, r.stderr, JSON.stringify(r.diagnostics), JSON.stringify(r.error ?? null), r.warnings.join('\n')].join('\n');
}

function assertContained(r: BuildResult, wrote: string, expect: RegExp): void {
  assert.equal(r.ok, false, 'the build must fail');
  assert.equal(r.wasm, undefined);
  assert.equal(r.error?.code, 'BUILD_FAILED', JSON.stringify(r.error));
  const first = r.diagnostics.find((d) => d.severity === 'error');
  assert.ok(first, `an error diagnostic: ${r.stderr}`);
  assert.match(first.message, expect);
  assert.ok(first.file === 'hello.c', `the diagnostic names the guest source, not a host path: ${first.file}`);
  const text = everything(r);
  for (const p of HOST_PATHS) assert.ok(!text.includes(p), `the result names the host path ${p}: ${text.slice(0, 500)}`);
  assert.ok(!text.includes(PASSWD), 'a line of the host /etc/passwd reached the result');
  assert.doesNotMatch(text.split(wrote).join(''), /root:|\/etc\/|\/proc\/|\/home\//, 'no path but the one the source wrote');
}

const MAIN = '\nint main(void) { return 0; }\n';

test('warm: hello.c builds (the image and the module rewrite stay out of the attacks)', async () => {
  const r = await engine.build({ sources: { 'hello.c': `#include <stdio.h>${MAIN}` } });
  assert.equal(r.ok, true, JSON.stringify(r.error) + r.stderr);
});

test('#include "/etc/passwd" is BUILD_FAILED: file not found', async () => {
  assertContained(await engine.build({ sources: { 'hello.c': `#include "/etc/passwd"${MAIN}` } }), '/etc/passwd', /'\/etc\/passwd' file not found/);
});

test('#include "../../../../etc/passwd" climbs nowhere: not found or not capable', async () => {
  assertContained(await engine.build({ sources: { 'hello.c': `#include "../../../../etc/passwd"${MAIN}` } }), '../../../../etc/passwd', /file not found|Capabilities insufficient/);
});

test('#include </proc/self/environ> is not found (no /proc in the sandbox, no host environment)', async () => {
  const r = await engine.build({ sources: { 'hello.c': `#include </proc/self/environ>${MAIN}` } });
  assertContained(r, '/proc/self/environ', /file not found|Capabilities insufficient/);
  assert.ok(!everything(r).includes('MEMBRANE_AUDIT_KEY') && !everything(r).includes('6b'.repeat(32)), 'the host environment never reaches the result');
});

test('#embed "/etc/passwd" (C23) is not found', async () => {
  const r = await engine.build({ sources: { 'hello.c': `const unsigned char p[] = {\n#embed "/etc/passwd"\n};${MAIN}` }, args: ['-std=c23'] });
  assertContained(r, '/etc/passwd', /file not found|Capabilities insufficient/);
});

test('a climb out of the sysroot image (#include "/sysroot/../../etc/passwd") is not capable', async () => {
  const r = await engine.build({ sources: { 'hello.c': `#include "/sysroot/../../etc/passwd"${MAIN}` } });
  assertContained(r, '/sysroot/../../etc/passwd', /file not found|Capabilities insufficient/);
});

test('-I/etc and -idirafter /etc name a guest directory, never the host one', async () => {
  const r = await engine.build({ sources: { 'hello.c': `#include <passwd>${MAIN}` }, args: ['-I/etc', '-idirafter', '/etc'] });
  assertContained(r, 'passwd', /file not found/);
});

test('the engine still builds and runs hello.c afterwards', async () => {
  const r = await engine.build({ sources: { 'hello.c': `#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n` } });
  assert.equal(r.ok, true, JSON.stringify(r.error) + r.stderr);
  const run = await engine.run(r.wasm!, {});
  assert.equal(run.stdout, 'hello\n');
});
