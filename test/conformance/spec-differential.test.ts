/**
 * The spec differential (issue #12): every module of the WebAssembly spec test suite
 * (test/conformance/vendor/spec-testsuite-wast.tar.gz, extracted to a temporary directory) runs
 * in V8 as given and after `instrumentFuel`, and every assertion must agree; every module the
 * suite calls invalid or malformed that V8 refuses must be refused by the rewriter too.
 *
 * Reader: our own `.wast` reader (test/conformance/wast/), with wabt's `parseWat` turning module
 * text into bytes. Modules wabt cannot encode or V8 cannot compile (memory64, GC… on this Node)
 * are counted and printed with their reasons.
 *
 * The suite runs twice: as the engine runs the rewriter (V8 gate first), and with the gate
 * skipped (`validated: true`), where only the rewriter's own index checks stand between an
 * invalid module and a valid output (before those checks existed, that run found the 14 invalid
 * modules made valid of issue #12).
 *
 * Alone: `node --import tsx --test test/conformance/spec-differential.test.ts`.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, test } from 'node:test';
import initWabt from 'wabt';
import { SpecRunner } from './wast/runner.ts';
import type { Wabt } from './wast/runner.ts';
import { tempDir } from '../helpers/tmp.ts';

const ARCHIVE = new URL('./vendor/spec-testsuite-wast.tar.gz', import.meta.url).pathname;

function wastFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...wastFiles(p));
    else if (name.endsWith('.wast')) out.push(p);
  }
  return out;
}

let extracted: string | null = null;
after(() => {
  if (extracted !== null) rmSync(extracted, { recursive: true, force: true });
});

/** The archive extracted once per process into a temporary directory (removed after the tests). */
function suiteFiles(): { dir: string; files: string[] } {
  if (extracted === null) {
    const dir = tempDir('membrane-spec-');
    const tar = spawnSync('tar', ['xzf', ARCHIVE, '-C', dir], { encoding: 'utf8' });
    if (tar.error !== undefined) assert.fail(`this test needs the 'tar' command to extract ${ARCHIVE}: ${tar.error.message}`);
    assert.equal(tar.status, 0, `tar failed: ${tar.stderr}`);
    extracted = dir;
  }
  const files = wastFiles(extracted);
  assert.ok(files.length >= 250, `expected the spec suite's .wast files, found ${files.length}`);
  return { dir: extracted, files };
}

async function runSuite(skipGate: boolean): Promise<void> {
  const { dir, files } = suiteFiles();
  const runner = new SpecRunner((await initWabt()) as unknown as Wabt, skipGate);
  const t0 = performance.now();
  for (const f of files) runner.runFile(f, relative(dir, f));
  const s = runner.tally;
  const secs = ((performance.now() - t0) / 1000).toFixed(1);

  const unsupported = [...s.unsupported].sort((a, b) => b[1] - a[1]);
  const unsupportedTotal = unsupported.reduce((n, [, c]) => n + c, 0);
  console.log(
    `spec differential${skipGate ? ' (V8 gate skipped: the rewriter\'s own checks)' : ''}: ${s.files} files, ${s.modules} modules, ${s.assertions} assertions, ` +
      `${s.agree} agree, ${s.mismatches.length} mismatches, ${s.invalidMadeValid.length} invalid-made-valid, ` +
      `${unsupportedTotal} unsupported (${s.skipped} assertions skipped on them), ${secs} s`,
  );
  console.log(
    `  invalid/malformed: ${s.invalidRefused} refused by the rewriter, ${s.malformedText} malformed texts (no bytes), ` +
      `${s.invalidV8Accepts.length} accepted by V8 itself, ${s.invalidPassedThrough} passed through still invalid; ` +
      `${s.nanPayloadOnly} results differ only in a NaN payload the spec leaves open`,
  );
  console.log(`  V8 baseline on the originals: ${s.v8Pass} pass, ${s.v8Fail.length} fail`);
  for (const f of s.v8Fail.slice(0, 10)) console.log(`    baseline fail: ${f}`);
  if (!skipGate) for (const w of s.invalidV8Accepts) console.log(`    V8 accepts a module the suite calls invalid: ${w}`);
  if (!skipGate) {
    console.log('  unsupported, by reason:');
    for (const [reason, n] of unsupported) console.log(`    ${String(n).padStart(6)}  ${reason}`);
  }
  for (const m of s.mismatches.slice(0, 30)) console.log(`  MISMATCH ${m}`);
  for (const m of s.invalidMadeValid.slice(0, 30)) console.log(`  INVALID-MADE-VALID ${m}`);

  assert.ok(s.assertions > 50_000, `only ${s.assertions} assertions ran: the reader is missing commands`);
  assert.ok(s.agree > 0.85 * s.assertions, `only ${s.agree} of ${s.assertions} assertions were compared and agreed`);
  assert.deepEqual(s.invalidMadeValid, [], `${s.invalidMadeValid.length} invalid modules made valid by the rewriter`);
  assert.deepEqual(s.mismatches, [], `${s.mismatches.length} mismatches between the original and the instrumented module`);
  if (!skipGate) assert.equal(s.invalidPassedThrough, 0, 'with the gate, every module V8 refuses is refused before the rewrite');
}

test('spec suite: original and instrumented agree on every assertion; no invalid module is made valid', () => runSuite(false));

test("spec suite with the V8 gate skipped: the rewriter's own index checks leave no invalid module valid", () => runSuite(true));
