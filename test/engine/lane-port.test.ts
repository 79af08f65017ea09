// The lane port (src/wasi/port.ts): a WASI guest writes a request to PORT_FD and reads the answer
// (u32 length, then bytes); the engine hands each request to the run's port handler. The port is
// stdin, and only a run given a port has it: any other guest's write to stdin is EBADF. The answer that
// starts the snippet restarts the fuel count.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { resolvePolicy } from '../../src/policy/resolve.ts';
import { PORT_FD, MAX_PORT_REQUEST_BYTES } from '../../src/wasi/index.ts';
import { watText } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

let engine: Engine;
before(() => {
  process.env['MEMBRANE_HOME'] = tempDir('membrane-port-');
  engine = createEngine({ poolSize: 1 });
});
after(() => engine.close());

/**
 * Writes `rounds` requests ("ping" + i) to the port; after each, reads the answer and prints the
 * bytes after the 4-byte length, then the errno of the write and of the read (as digits);
 * `spin` iterations of a busy loop come before the first request (fuel to be forgotten).
 */
const guest = (rounds: number, spin: number, fd = PORT_FD, writeLen = 5) =>
  watText(`(module
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $r (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 160)
  (data (i32.const 0) "ping0")
  (func $digit (param $n i32)
    (i32.store8 (i32.const 300) (i32.add (i32.const 48) (local.get $n)))
    (i32.store (i32.const 200) (i32.const 300)) (i32.store (i32.const 204) (i32.const 1))
    (drop (call $w (i32.const 1) (i32.const 200) (i32.const 1) (i32.const 208))))
  (func (export "_start")
    (local $i i32) (local $n i32) (local $e i32)
    (loop $s (local.set $n (i32.add (local.get $n) (i32.const 1))) (br_if $s (i32.lt_u (local.get $n) (i32.const ${spin}))))
    (loop $round
      (i32.store8 (i32.const 4) (i32.add (i32.const 48) (local.get $i)))
      (i32.store (i32.const 100) (i32.const 0)) (i32.store (i32.const 104) (i32.const ${writeLen}))
      (local.set $e (call $w (i32.const ${fd}) (i32.const 100) (i32.const 1) (i32.const 108)))
      (call $digit (i32.rem_u (local.get $e) (i32.const 10)))
      (i32.store (i32.const 100) (i32.const 1024)) (i32.store (i32.const 104) (i32.const 4096)) (i32.store (i32.const 108) (i32.const 0))
      (local.set $e (call $r (i32.const ${fd}) (i32.const 100) (i32.const 1) (i32.const 108)))
      (call $digit (i32.rem_u (local.get $e) (i32.const 10)))
      (if (i32.gt_u (i32.load (i32.const 108)) (i32.const 4)) (then
        (i32.store (i32.const 100) (i32.const 1028)) (i32.store (i32.const 104) (i32.sub (i32.load (i32.const 108)) (i32.const 4)))
        (drop (call $w (i32.const 1) (i32.const 100) (i32.const 1) (i32.const 108)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $round (i32.lt_u (local.get $i) (i32.const ${rounds})))))
)`);

const policy = () => resolvePolicy({ profile: 'compute' }, engine.config);

test('each request reaches the handler and its answer is read back; the handler sees the fuel so far', async () => {
  const seen: { text: string; fuel: number }[] = [];
  const r = await engine.runResolved(await guest(3, 0), {}, policy(), async (req, fuelUsed) => {
    const text = new TextDecoder().decode(req);
    seen.push({ text, fuel: fuelUsed });
    return { answer: new TextEncoder().encode(`<${text}>`) };
  });
  assert.equal(r.ok, true, r.error?.message);
  assert.equal(r.stdout, '00<ping0>00<ping1>00<ping2>');
  assert.deepEqual(seen.map((s) => s.text), ['ping0', 'ping1', 'ping2']);
  assert.ok(seen.every((s) => s.fuel >= 0));
});

test('"the snippet starts" restarts the fuel count: the spin before it is not billed', async () => {
  const handler = (start: boolean) => async () => (start ? { answer: new Uint8Array(0), start: { ms: 5000, fuel: 1e9 } } : { answer: new Uint8Array(0) });
  const counted = await engine.runResolved(await guest(1, 2_000_000), {}, policy(), handler(false));
  const restarted = await engine.runResolved(await guest(1, 2_000_000), {}, policy(), handler(true));
  assert.equal(counted.ok, true, counted.error?.message);
  assert.equal(restarted.ok, true, restarted.error?.message);
  assert.ok(counted.fuelUsed > 2_000_000, `counted ${counted.fuelUsed}`);
  assert.ok(restarted.fuelUsed < 100_000, `restarted ${restarted.fuelUsed}`);
});

test('a guest error code from the handler reads as EIO (29); a read with nothing asked is end of file', async () => {
  const r = await engine.runResolved(await guest(1, 0), {}, policy(), async () => -3);
  assert.equal(r.stdout, '09');
});

test('without a port, stdin is the run\'s bytes: writing it is EBADF (8), reading it reads them, under every run', async () => {
  const r = await engine.run(await guest(1, 0), { profile: 'compute' });
  assert.equal(r.stdout, '80');
  const posix = await engine.run(await guest(1, 0), { profile: 'posix', stdin: 'abcdefgh' });
  assert.equal(posix.stdout, '80efgh');
});

test('a request past MAX_PORT_REQUEST_BYTES is EFBIG (22) and never reaches the handler', async () => {
  let calls = 0;
  const big = await guest(1, 0, PORT_FD, MAX_PORT_REQUEST_BYTES + 1);
  const r = await engine.runResolved(big, {}, policy(), async () => {
    calls++;
    return { answer: new Uint8Array(0) };
  });
  // EFBIG prints as 2 (22 % 10); the read then has nothing pending: 0 bytes, success.
  assert.equal(r.stdout, '20');
  assert.equal(calls, 0);
});
