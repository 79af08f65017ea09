// The spawning caps on the os_process tier: a guest's run_command, exec, process_spawn and
// run_command_many (and a JS snippet's commands.run / exec.run) run inside its child, on the child
// engine's own worker threads, from the parent's registry — with the same stdout, exit codes and
// fuel as the same call on the instance tier.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { test } from 'node:test';
import { CommandRegistry } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { testEngine } from '../helpers/engine.ts';
import { poolFull } from '../helpers/os-pool.ts';
import { commandShelfDir } from '../../src/engine/os-process/lane.ts';
import { INLINE_MAX_BYTES } from '../../src/engine/os-process/commands.ts';

const NO_BWRAP = { tier: 'os_process', bwrapPath: '' } as const;
const fixture = (n: string) => new Uint8Array(readFileSync(new URL(`../fixtures/c/${n}.wasm`, import.meta.url)));
const nest = fixture('nest');
const fanout = fixture('fanout');

const withNest = (r: CommandRegistry): CommandRegistry => {
  r.register('nest', nest);
  return r;
};

/** The same run on both tiers: what must match. */
async function both(engine: ReturnType<typeof testEngine>, bytes: Uint8Array, opts: Record<string, unknown>) {
  const here = await engine.run(bytes, opts);
  const there = await engine.run(bytes, { ...opts, ...NO_BWRAP });
  assert.equal(there.ok, here.ok, JSON.stringify([here.error, there.error]));
  assert.equal(there.stdout, here.stdout);
  assert.equal(there.exitCode, here.exitCode);
  assert.equal(there.fuelUsed, here.fuelUsed);
  return { here, there };
}

test('run_command, exec, process_spawn and run_command_many on os_process match the instance tier', { timeout: 120_000 }, async () => {
  const engine = testEngine({ commands: withNest(CommandRegistry.withBuiltins()), poolSize: 1 });
  const run = await both(engine, nest, { profile: 'minimal', argv: ['run', 'echo', 'round', 'trip'] });
  assert.equal(run.there.stdout, 'round trip\nstatus=0 error=\n');
  assert.equal((await both(engine, nest, { profile: 'minimal', argv: ['exec', 'wc', '-c'] })).there.stdout, '6\nstatus=0 error=\n');
  assert.equal((await both(engine, nest, { profile: 'minimal', argv: ['spawn', '3', 'echo', 'x'] })).there.stdout, 'spawned 3 refused 0 code 0\nwaited ok 3\n');
  const many = await both(engine, fanout, { profile: 'posix', argv: ['4', '0', 'cat'] });
  assert.equal(many.there.stdout, [0, 1, 2, 3].map((i) => `task ${i} status 0 error  out line ${i}\n`).join(''));
  // exec recursion stops at the same depth, with the same refusal
  const deep = await both(engine, nest, { profile: 'minimal', argv: ['deep', '0'] });
  assert.match(deep.there.stdout, new RegExp(`refused ${GUEST_ERR.QUOTA}\\n$`));
  // a JS snippet's commands and exec powers
  const code = "[commands.run('echo', ['a', 'b']), exec.run('nest', ['run', 'seq', '3']), commands.run('sort', [], { stdin: 'b\\na\\n' })]";
  const jsHere = await engine.exec({ language: 'js', profile: 'minimal', code });
  const jsThere = await engine.exec({ language: 'js', profile: 'minimal', code, ...NO_BWRAP });
  assert.equal(jsThere.ok, true, JSON.stringify(jsThere.error));
  assert.deepEqual(jsThere.result, jsHere.result);
  assert.deepEqual(jsThere.result, [
    { status: 0, stdout: 'a b\n', stderr: '' },
    { status: 0, stdout: '1\n2\n3\nstatus=0 error=\n', stderr: '' },
    { status: 0, stdout: 'a\nb\n', stderr: '' },
  ]);
});

test("the child's commands are exactly the parent's: no built-ins it lacks, a later registration seen by a pooled child, a toolkit declaration kept", { timeout: 120_000 }, async () => {
  // A registry without the built-ins: `echo` is NOT_FOUND in the child too.
  const bare = withNest(new CommandRegistry());
  bare.register('nest-declared', nest, { toolkit: 'test', caps: ['commands'], hostCaps: [] });
  const engine = testEngine({ commands: bare, poolSize: 1, osProcessPool: 1 });
  const missing = await both(engine, nest, { profile: 'minimal', argv: ['run', 'echo', 'x'] });
  assert.equal(missing.there.stdout, `error ${GUEST_ERR.NOT_FOUND}\n`);
  // The pool now holds a child booted before the next registration: it still runs the new command.
  await poolFull(engine, 1);
  bare.register('echo', new Uint8Array(readFileSync(new URL('../../commands/bin/echo.wasm', import.meta.url))));
  const later = await both(engine, nest, { profile: 'minimal', argv: ['run', 'echo', 'late'] });
  assert.equal(later.there.stdout, 'late\nstatus=0 error=\n');
  // A command installed with a toolkit declaration runs under its caller's grant cut to it: spawned, it cannot link exec (on both tiers).
  const cut = await both(engine, nest, { profile: 'minimal', argv: ['spawn', '1', 'nest-declared', 'exec', 'echo', 'no'] });
  assert.equal(cut.there.stdout, 'spawned 1 refused 0 code 0\nwaited ok 0\n');
  const whole = await both(engine, nest, { profile: 'minimal', argv: ['spawn', '1', 'nest', 'exec', 'echo', 'yes'] });
  assert.equal(whole.there.stdout, 'spawned 1 refused 0 code 0\nwaited ok 1\n');
});

/** `bytes` with a custom section of `pad` bytes appended (still the same command). */
function padded(bytes: Uint8Array, pad: number): Uint8Array {
  const leb = (n: number): number[] => {
    const out: number[] = [];
    do {
      const b = n & 0x7f;
      n >>>= 7;
      out.push(n ? b | 0x80 : b);
    } while (n);
    return out;
  };
  const name = [...Buffer.from('pad')];
  const body = [...leb(name.length), ...name];
  return new Uint8Array([...bytes, 0, ...leb(body.length + pad), ...body, ...new Uint8Array(pad)]);
}

test('a big registered command goes to the child by content hash (a file of the engine\'s shelf), checked there; the shelf goes with the engine', { timeout: 120_000 }, async () => {
  const big = padded(new Uint8Array(readFileSync(new URL('../../commands/bin/echo.wasm', import.meta.url))), INLINE_MAX_BYTES);
  const r = withNest(new CommandRegistry());
  r.register('bigecho', big);
  const engine = testEngine({ commands: r, poolSize: 1, osProcessPool: 0 });
  const same = await both(engine, nest, { profile: 'minimal', argv: ['run', 'bigecho', 'by', 'hash'] });
  assert.equal(same.there.stdout, 'by hash\nstatus=0 error=\n');
  const shelf = commandShelfDir(engine.config)!;
  const sha = createHash('sha256').update(big).digest('hex');
  assert.deepEqual(readdirSync(shelf), [`${sha}.wasm`], 'only the big module is on the shelf (nest went inline)');
  // A shelf file changed behind the engine's back no longer hashes the same: the child leaves the command out.
  const file = join(shelf, `${sha}.wasm`);
  chmodSync(file, 0o600);
  writeFileSync(file, padded(big.subarray(0, 8), 16));
  const tampered = await engine.run(nest, { profile: 'minimal', argv: ['run', 'bigecho', 'x'], ...NO_BWRAP });
  assert.equal(tampered.stdout, `error ${GUEST_ERR.NOT_FOUND}\n`);
  await engine.close();
  assert.equal(existsSync(shelf), false);
});
