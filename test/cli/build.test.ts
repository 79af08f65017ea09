// `membrane build` and `membrane exec --lang c|cpp` from the command line (issue #16 must-shows
// 1, 2 and 4): the sources compile and link inside the sandbox, the module runs with `membrane run`,
// a compile error names hello.c:3:5 and exits BUILD_FAILED's code with no host path. The CLI's
// engines keep their module cache in the run's toolchain cache (MEMBRANE_CACHE_DIR), where the
// other build tests leave the rewritten LLVM: a fresh cache under HOME would rewrite it (~100 MB)
// again on every run.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runNode, BIN } from '../helpers/cli.ts';
import { ERROR_TABLE } from '../../src/errors.ts';
import { BROKEN_C, HELLO_C, TOOLCHAIN_CACHE, VECTOR_CPP } from '../helpers/toolchain.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-build-cli-');
const DIR = tempDir('membrane-build-src-');
writeFileSync(join(DIR, 'hello.c'), HELLO_C);
writeFileSync(join(DIR, 'main.cpp'), VECTOR_CPP);
writeFileSync(join(DIR, 'broken.c'), BROKEN_C);

const membrane = (args: string[]) => runNode([BIN, ...args], { env: { MEMBRANE_HOME: HOME, MEMBRANE_CACHE_DIR: TOOLCHAIN_CACHE }, cwd: DIR, limitMs: 240_000 });

test('membrane build hello.c -o hello.wasm && membrane run hello.wasm prints its line', async () => {
  const b = await membrane(['build', 'hello.c', '-o', 'hello.wasm']);
  assert.equal(b.code, 0, b.stderr);
  assert.match(b.stderr, /wrote hello\.wasm \(\d+ bytes; 3 steps/);
  const r = await membrane(['run', 'hello.wasm']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'hello from in-sandbox clang 42\n');
});

test('membrane build main.cpp (<vector>, <iostream>) && membrane run prints the sum', async () => {
  const b = await membrane(['build', 'main.cpp', '-o', 'main.wasm', '--json']);
  assert.equal(b.code, 0, b.stderr);
  const out = JSON.parse(b.stdout) as { ok: boolean; wasmBytes: number; output: string; diagnostics: unknown[] };
  assert.equal(out.ok, true);
  assert.equal(out.output, 'main.wasm');
  assert.ok(out.wasmBytes > 10_000);
  const r = await membrane(['run', 'main.wasm']);
  assert.equal(r.stdout, 'sum 6\n', r.stderr);
});

test('a compile error: diagnostics name broken.c:3:5, the exit code is BUILD_FAILED, no host path', async () => {
  const b = await membrane(['build', 'broken.c', '-o', 'broken.wasm']);
  assert.equal(b.code, ERROR_TABLE.BUILD_FAILED.exitCode);
  assert.match(b.stderr, /broken\.c:3:5: error: use of undeclared identifier 'undeclared_thing'/);
  assert.match(b.stderr, /BUILD_FAILED/);
  for (const p of [DIR, HOME, TOOLCHAIN_CACHE, 'node_modules']) assert.ok(!b.stderr.includes(p), `host path ${p}: ${b.stderr}`);
  const j = await membrane(['build', join(DIR, 'broken.c'), '-o', 'broken.wasm', '--json']);
  const out = JSON.parse(j.stdout) as { diagnostics: { file: string; line: number; column: number }[] };
  assert.deepEqual([out.diagnostics[0]!.file, out.diagnostics[0]!.line, out.diagnostics[0]!.column], ['broken.c', 3, 5], 'an absolute path is known by its base name');
  assert.ok(!j.stdout.includes(DIR));
});

test('membrane exec --lang c -c CODE prints the program output', async () => {
  const r = await membrane(['exec', '--lang', 'c', '-c', '#include <stdio.h>\nint main(void) { puts("exec c"); return 0; }']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'exec c\n0\n');
});
