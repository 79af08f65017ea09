#!/usr/bin/env node
// `node scripts/with-tmpdir.mjs CMD ARGS…`: runs one command with TMPDIR set to a fresh directory
// of its own (os.tmpdir()/membrane-run-…) and removes that directory when the command ends —
// passed, failed or interrupted (a SIGTERM is passed on to the command; a Ctrl-C reaches it from the
// terminal, and this waits for it to end). Every test
// script runs under it (package.json, scripts/runtime-suites.sh, scripts/test-system.sh), so what
// a test process leaves behind — a dir it did not remove, a process killed at a timeout — goes
// with the run, not into the machine's /tmp. Child processes the tests spawn inherit TMPDIR;
// one started with an empty environment (the os_process child, by design) falls back to /tmp and
// uses its own home instead. tsx's transform cache (os.tmpdir()/tsx-<uid>) stays shared with the
// machine's temp dir through a link, so a run does not recompile every source from cold, and the
// build tests' toolchain cache (test/helpers/toolchain.ts: the sysroot image and the rewritten
// LLVM module, paid once per machine) stays in the machine's temp dir too, named by
// MEMBRANE_TEST_TOOLCHAIN_CACHE. The test engines of the run share one module cache inside the
// run's dir (MEMBRANE_TEST_RUN_CACHE, test/helpers/engine.ts).
// Exits with the command's status (128 + signal number when a signal ended it).
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir, userInfo, constants } from 'node:os';
import { join } from 'node:path';

const [command, ...args] = process.argv.slice(2);
if (!command) {
  process.stderr.write('usage: node scripts/with-tmpdir.mjs COMMAND [ARGS…]\n');
  process.exit(2);
}
const base = tmpdir();
const dir = mkdtempSync(join(base, 'membrane-run-'));
const tsxName = `tsx-${process.geteuid ? process.geteuid() : userInfo().username}`;
try {
  mkdirSync(join(base, tsxName), { recursive: true, mode: 0o700 });
  symlinkSync(join(base, tsxName), join(dir, tsxName));
} catch {
  // No shared cache (e.g. a read-only base): tsx makes its own inside the run's dir.
}

const uid = process.getuid ? process.getuid() : userInfo().uid;
const toolchainCache = process.env.MEMBRANE_TEST_TOOLCHAIN_CACHE || join(base, `membrane-test-cache-${uid}`);
// One module cache for the run's test engines (test/helpers/engine.ts); set it empty for one per file.
const runCache = process.env.MEMBRANE_TEST_RUN_CACHE ?? join(dir, 'membrane-test-cache');
const env = { ...process.env, TMPDIR: dir, MEMBRANE_TEST_TOOLCHAIN_CACHE: toolchainCache, MEMBRANE_TEST_RUN_CACHE: runCache };
const child = spawn(command, args, { stdio: 'inherit', env });
process.on('SIGINT', () => {}); // the terminal sent it to the whole process group: wait for the command
process.on('SIGTERM', () => child.kill('SIGTERM'));
child.on('error', (e) => {
  process.stderr.write(`with-tmpdir: cannot start ${command}: ${e.message}\n`);
  finish(127);
});
child.on('exit', (code, signal) => finish(code ?? 128 + (constants.signals[signal] ?? 0)));

function finish(status) {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  } catch (e) {
    process.stderr.write(`with-tmpdir: could not remove ${dir}: ${e.message}\n`);
  }
  process.exit(status);
}
