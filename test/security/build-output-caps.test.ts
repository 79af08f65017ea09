// Attack: flood the build's result — 100 000 `#error` lines with -ferror-limit=0 (megabytes of
// stderr, 100 000 diagnostics), one diagnostic with a 50 000-character message, a request with more
// sources or flags than allowed, a one-line source that links into an 80 MiB module — so that the
// host parses, keeps and returns unbounded data.
// Now: stderr is capped at the engine's output limit (marked truncated), the parsed diagnostics at
// MAX_DIAGNOSTICS, each message at MAX_MESSAGE_CHARS, the error's details at 20 diagnostics; the
// result returns BUILD_FAILED. A linked module over MAX_WASM_BYTES is OUTPUT_LIMIT, never read
// back. Too many sources or flags, or an oversized flag, is POLICY_INVALID before anything runs.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createEngine, DEFAULT_OUTPUT_LIMIT_BYTES } from '../../src/index.ts';
import { TOOLCHAIN_CACHE } from '../helpers/toolchain.ts';
import { MAX_ARG_CHARS, MAX_BUILD_ARGS, MAX_SOURCES, MAX_WASM_BYTES } from '../../src/build/build.ts';
import { MAX_DIAGNOSTICS, MAX_MESSAGE_CHARS, parseDiagnostics } from '../../src/build/diagnostics.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-home-');
process.env['MEMBRANE_AUDIT_KEY'] = '6b'.repeat(32);
// The toolchain cache is shared by the test files that build (its one-time costs are not under test here).
const engine = createEngine({ poolSize: 2, cacheDir: TOOLCHAIN_CACHE });
after(() => engine.close());

test('warm: hello.c builds', async () => {
  const r = await engine.build({ sources: { 'hello.c': '#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n' } });
  assert.equal(r.ok, true, JSON.stringify(r.error) + r.stderr);
});

test('100 000 errors with -ferror-limit=0: stderr capped at the output limit, diagnostics at MAX_DIAGNOSTICS', async () => {
  let src = '';
  for (let i = 0; i < 100_000; i++) src += `#error e${i}\n`;
  const t0 = performance.now();
  const r = await engine.build({ sources: { 'errs.c': src }, args: ['-ferror-limit=0'], timeoutMs: 60_000 });
  const ms = performance.now() - t0;
  assert.equal(r.error?.code, 'BUILD_FAILED', JSON.stringify(r.error));
  assert.equal(r.diagnostics.length, MAX_DIAGNOSTICS);
  assert.deepEqual(r.diagnostics[0], { file: 'errs.c', line: 1, column: 2, severity: 'error', message: 'e0', tool: 'clang' });
  assert.ok(r.stderr.length <= DEFAULT_OUTPUT_LIMIT_BYTES + 100, `stderr is ${r.stderr.length} chars`);
  assert.match(r.stderr, /\[membrane: stderr truncated at 1048576 bytes\]\n$/);
  const details = r.error!.details as { diagnostics: unknown[]; errors: number };
  assert.equal(details.diagnostics.length, 20);
  assert.ok(JSON.stringify(r.error).length < 20_000, 'the error stays small');
  assert.ok(ms < 60_000, `took ${ms.toFixed(0)} ms`);
});

test('a 50 000-character #error message is clipped to MAX_MESSAGE_CHARS in diagnostics and to 500 in the error', async () => {
  const r = await engine.build({ sources: { 'long.c': `#error ${'A'.repeat(50_000)}\n` } });
  assert.equal(r.error?.code, 'BUILD_FAILED');
  assert.equal(r.diagnostics.length, 1);
  const m = r.diagnostics[0]!.message;
  assert.ok(m.length <= MAX_MESSAGE_CHARS, `message is ${m.length} chars`);
  assert.ok(m.startsWith('AAAA') && m.endsWith('…'), 'clipped, and marked so');
  assert.ok(r.error!.message.length <= 500);
});

test('parseDiagnostics alone: a flood of lines stops at MAX_DIAGNOSTICS, every message within MAX_MESSAGE_CHARS', () => {
  const line = `x.c:1:1: error: ${'B'.repeat(MAX_MESSAGE_CHARS * 3)}`;
  const t0 = performance.now();
  const d = parseDiagnostics(Array.from({ length: 2_000 }, () => line).join('\n'));
  assert.equal(d.length, MAX_DIAGNOSTICS);
  for (const x of d) assert.ok(x.message.length <= MAX_MESSAGE_CHARS);
  assert.equal(parseDiagnostics(`x.c:1:1: error: ${'C'.repeat(MAX_MESSAGE_CHARS)}`)[0]!.message.length, MAX_MESSAGE_CHARS, 'a message of exactly the cap is kept whole');
  assert.ok(performance.now() - t0 < 5_000 + LOAD_SLACK_MS);
});

test(`more than MAX_SOURCES (${MAX_SOURCES}) sources, MAX_BUILD_ARGS (${MAX_BUILD_ARGS}) flags or a flag over MAX_ARG_CHARS is POLICY_INVALID, nothing run`, async () => {
  const sources = Object.fromEntries(Array.from({ length: MAX_SOURCES + 1 }, (_, i) => [`s${i}.c`, 'int x;\n']));
  const tooMany = await engine.build({ sources });
  assert.equal(tooMany.error?.code, 'POLICY_INVALID');
  assert.match(tooMany.error!.message, /at most 256 sources/);
  const hello = { 'hello.c': 'int main(void) { return 0; }\n' };
  const flags = await engine.build({ sources: hello, args: Array.from({ length: MAX_BUILD_ARGS + 1 }, () => '-Wall') });
  assert.equal(flags.error?.code, 'POLICY_INVALID');
  const long = await engine.build({ sources: hello, args: [`-DX=${'1'.repeat(MAX_ARG_CHARS)}`] });
  assert.equal(long.error?.code, 'POLICY_INVALID');
  for (const r of [tooMany, flags, long]) {
    assert.equal(r.steps.length, 0);
    assert.equal(r.fuelUsed, 0);
  }
});

test(`a module over MAX_WASM_BYTES (${MAX_WASM_BYTES}) — an 80 MiB initialised array — is OUTPUT_LIMIT, not read back`, async () => {
  const t0 = performance.now();
  const r = await engine.build({ sources: { 'big.c': 'char big[80 << 20] = {1};\nint main(void) { return big[7]; }\n' }, timeoutMs: 60_000 });
  const ms = performance.now() - t0;
  assert.equal(r.error?.code, 'OUTPUT_LIMIT', JSON.stringify(r.error));
  assert.match(r.error!.message, /larger than 67108864 bytes/);
  assert.equal(r.wasm, undefined);
  assert.ok(ms < 60_000, `took ${ms.toFixed(0)} ms`);
});
