// The space wall on files: a guest filling its disk, its inode table or its descriptor table
// hits a limit as a WASI errno for itself; a mount too big to copy in is refused before it runs.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { cGuest, watText } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-flood-');
const fileio = new Uint8Array(readFileSync(new URL('../../bench/io/fileio.wasm', import.meta.url)));

test('a guest writing 64 MiB into a 1 MiB VFS gets ENOSPC and fails cleanly', async () => {
  const engine = testEngine({ poolSize: 1, vfsMaxBytes: 1024 * 1024 });
  const r = await engine.run(fileio, { argv: ['big', '/tmp'], profile: 'network' });
  assert.equal(r.exitCode, 1, JSON.stringify(r.error));
  assert.match(r.stderr, /No space left on device/);
});

test('a guest creating 1000 files in a VFS of 50 inodes gets ENOSPC', async () => {
  const engine = testEngine({ poolSize: 1, vfsMaxInodes: 50 });
  const r = await engine.run(fileio, { argv: ['small', '/tmp'], profile: 'network' });
  assert.equal(r.exitCode, 1, JSON.stringify(r.error));
  assert.match(r.stderr, /open small: No space left on device/);
});

test('a guest opening descriptors without closing them gets EMFILE from its own table', async () => {
  const engine = testEngine({ poolSize: 1 });
  const m = await watText(`(module
    (import "wasi_snapshot_preview1" "path_open"
      (func $open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
    (memory (export "memory") 1)
    (data (i32.const 0) "f")
    (func (export "flood") (result i32 i32)
      (local $n i32) (local $err i32)
      (block $done
        (loop $more
          (local.set $err (call $open (i32.const 3) (i32.const 0) (i32.const 0) (i32.const 1)
            (i32.const 1) (i64.const -1) (i64.const -1) (i32.const 0) (i32.const 16)))
          (br_if $done (local.get $err))
          (local.set $n (i32.add (local.get $n) (i32.const 1)))
          (br_if $more (i32.lt_u (local.get $n) (i32.const 100000)))))
      (local.get $n) (local.get $err)))`);
  const r = await engine.run(m, { invoke: 'flood' });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const [opened, errno] = r.result as number[];
  assert.equal(errno, 33, 'EMFILE');
  assert.ok(opened! > 500 && opened! < 1024, `opened ${opened}`);
});

test('a mount with more files than the operator allows is refused before the guest runs', async () => {
  const engine = testEngine({ poolSize: 1, maxMountFiles: 5 });
  const dir = tempDir('membrane-mount-flood-');
  mkdirSync(join(dir, 'd'));
  for (let i = 0; i < 6; i++) writeFileSync(join(dir, 'd', `f${i}`), 'x');
  const r = await engine.run(cGuest('escape'), { mounts: [`${dir}:/data`] });
  assert.equal(r.error?.code, 'POLICY_INVALID');
  assert.match(r.error!.message, /more than 5 files/);
  assert.equal(r.stdout, '', 'the guest never ran');
});
