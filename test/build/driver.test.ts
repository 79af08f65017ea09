// The clang driver's plan (src/build/driver.ts): `clang -###` output is text a sandboxed program
// printed, so only toolchain jobs are run, with exactly the printed arguments; anything else in a
// plan is refused, never executed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { drive, MAX_JOBS, needsPlan, parseJobs, PlanCache, temporaries, toolArgs, type ToolRun } from '../../src/build/driver.ts';

const HEADER = 'clang version 22.1.0\nTarget: wasm32-unknown-wasip1\nThread model: posix\nInstalledDir: \nBuild config: +assertions\n';

test('a compile-and-link plan: the cc1 job and the wasm-ld job, words unquoted', () => {
  const jobs = parseJobs(`${HEADER} (in-process)\n "" "clang" "-cc1" "-triple" "wasm32-unknown-wasip1" "-D" "MSG=\\"a b\\"" "-o" "/tmp/h-1a2b.o" "-x" "c" "h.c"\n "wasm-ld" "-m" "wasm32" "/tmp/h-1a2b.o" "-lc" "-o" "h.wasm"\n`);
  assert.ok(Array.isArray(jobs));
  assert.deepEqual(jobs[0], { tool: 'clang', args: ['-cc1', '-triple', 'wasm32-unknown-wasip1', '-D', 'MSG="a b"', '-o', '/tmp/h-1a2b.o', '-x', 'c', 'h.c'] });
  assert.deepEqual(jobs[1], { tool: 'wasm-ld', args: ['-m', 'wasm32', '/tmp/h-1a2b.o', '-lc', '-o', 'h.wasm'] });
  assert.deepEqual(temporaries(jobs), ['/tmp/h-1a2b.o']);
});

test('a job that is not a toolchain tool is refused, not run', () => {
  for (const line of [' "/bin/sh" "-c" "rm -rf /"', ' "node" "-e" "1"', ' "ld.lld" "x.o"', ' "wasm-ld-evil" "x"']) {
    const r = parseJobs(`${HEADER}${line}\n`);
    assert.equal(typeof r, 'string', line);
    assert.match(r as string, /not a toolchain tool/);
  }
  assert.match(parseJobs(`${HEADER} "wasm-ld" "unterminated\n`) as string, /could not be read/);
  assert.match(parseJobs(HEADER) as string, /no jobs/);
  assert.match(parseJobs(` "wasm-ld" "x"\n`.repeat(MAX_JOBS + 1)) as string, /more than/);
});

test('which invocations are planned; the driver prefix comes first so the caller\'s flags win', () => {
  assert.equal(needsPlan('clang', ['a.c', '-o', 'a.wasm']), true);
  assert.equal(needsPlan('clang', ['-c', 'a.c']), false);
  assert.equal(needsPlan('clang', ['-cc1', 'a.c']), false);
  assert.equal(needsPlan('wasm-ld', ['a.o']), false);
  assert.deepEqual(toolArgs('clang', ['-c', 'a.c']).slice(-2), ['-c', 'a.c']);
  assert.ok(toolArgs('clang', ['x']).includes('--sysroot=/sysroot'));
  assert.ok(toolArgs('clang++', ['x']).includes('-fno-exceptions'));
  assert.deepEqual(toolArgs('clang', ['-cc1', 'x']), ['-cc1', 'x']);
  assert.deepEqual(toolArgs('wasm-ld', ['x']), ['x']);
});

test('a link plan is made once and kept; a plan with /tmp objects (compile and link in one) is never kept', async () => {
  const plans = new PlanCache();
  const ran: string[] = [];
  const run = async (tool: string, argv: readonly string[]): Promise<ToolRun> => {
    ran.push(`${tool} ${argv.includes('-###') ? '-###' : argv[0]}`);
    const plan = argv.includes('a.c') ? ' "" "clang" "-cc1" "-o" "/tmp/a-1.o" "a.c"\n "wasm-ld" "/tmp/a-1.o" "-o" "a.wasm"\n' : ' "wasm-ld" "a.o" "-o" "a.wasm"\n';
    return { exitCode: 0, stdout: '', stderr: argv.includes('-###') ? `${HEADER}${plan}` : '', fuelUsed: 1 };
  };
  await drive('clang', ['a.o', '-o', 'a.wasm'], run, undefined, plans);
  await drive('clang', ['a.o', '-o', 'a.wasm'], run, undefined, plans);
  assert.deepEqual(ran, ['clang -###', 'wasm-ld a.o', 'wasm-ld a.o']);
  ran.length = 0;
  await drive('clang', ['a.c', '-o', 'a.wasm'], run, undefined, plans);
  await drive('clang', ['a.c', '-o', 'a.wasm'], run, undefined, plans);
  assert.deepEqual(ran, ['clang -###', 'clang -cc1', 'wasm-ld /tmp/a-1.o', 'clang -###', 'clang -cc1', 'wasm-ld /tmp/a-1.o']);
});
