// A file a guest creates and writes through WASI is in its VFS database when the run ends —
// closed by fd_close or not (path_open(O_CREAT) stages the creation with its first bytes, and the
// worker commits what is staged when a call ends); so are held writes to an existing file.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { resolveVfs, Vfs } from '../../src/storage/index.ts';
import { watText } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-staged-');
const fileio = new Uint8Array(readFileSync(new URL('../../bench/io/fileio.wasm', import.meta.url)));

function openNamed(name: string): Vfs {
  return Vfs.open({ file: resolveVfs({ name }).file });
}

test('1000 small files created, written and closed by a C guest are all in the file VFS after the run', async () => {
  const engine = testEngine({ poolSize: 1 });
  const r = await engine.run(fileio, { argv: ['small', '/tmp'], profile: 'network', vfs: 'small-files' });
  assert.equal(r.exitCode, 0, JSON.stringify(r.error) + r.stderr);
  assert.match(r.stdout, /listed 1000 bytes 1024000/);
  const vfs = openNamed('small-files');
  try {
    const dir = vfs.stat('tmp', '/small').ino;
    const names = vfs.readdir(dir, 0, 2000).map((e) => e.name);
    assert.equal(names.length, 1000);
    for (const name of [names[0]!, names[499]!, names[999]!]) {
      const s = vfs.stat('tmp', `/small/${name}`);
      assert.equal(s.size, 1024);
      assert.ok(Buffer.from(vfs.read(s.ino, 0, 1024)).equals(Buffer.alloc(1024, 'x')));
    }
  } finally {
    vfs.close();
  }
});

test('a file created and written but never closed before proc_exit is committed, contents included', async () => {
  const engine = testEngine({ poolSize: 1 });
  const m = await watText(`(module
    (import "wasi_snapshot_preview1" "path_open"
      (func $open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
    (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
    (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
    (memory (export "memory") 1)
    (data (i32.const 0) "kept.txt")
    (data (i32.const 16) "\\20\\00\\00\\00\\05\\00\\00\\00")
    (data (i32.const 32) "hello")
    (func (export "_start")
      (if (call $open (i32.const 3) (i32.const 0) (i32.const 0) (i32.const 8) (i32.const 1)
            (i64.const -1) (i64.const -1) (i32.const 0) (i32.const 8))
        (then (call $exit (i32.const 2))))
      (if (call $write (i32.load (i32.const 8)) (i32.const 16) (i32.const 1) (i32.const 24))
        (then (call $exit (i32.const 3))))
      (call $exit (i32.const 0))))`);
  const r = await engine.run(m, { vfs: 'unclosed' });
  assert.equal(r.exitCode, 0, JSON.stringify(r.error));
  const vfs = openNamed('unclosed');
  try {
    const s = vfs.stat('workspace', '/kept.txt');
    assert.equal(Buffer.from(vfs.read(s.ino, 0, s.size)).toString(), 'hello');
  } finally {
    vfs.close();
  }
});

test('held writes to an existing file are committed when the call ends in a trap', async () => {
  const engine = testEngine({ poolSize: 1 });
  // Create and close kept.txt ("hello"), open it again (no O_CREAT), write "hello" twice at the
  // descriptor's offset (held), then trap without closing.
  const m = await watText(`(module
    (import "wasi_snapshot_preview1" "path_open"
      (func $open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
    (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
    (import "wasi_snapshot_preview1" "fd_close" (func $close (param i32) (result i32)))
    (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
    (memory (export "memory") 1)
    (data (i32.const 0) "kept.txt")
    (data (i32.const 16) "\\20\\00\\00\\00\\05\\00\\00\\00")
    (data (i32.const 32) "hello")
    (func $w
      (if (call $write (i32.load (i32.const 8)) (i32.const 16) (i32.const 1) (i32.const 24))
        (then (call $exit (i32.const 3)))))
    (func (export "_start")
      (if (call $open (i32.const 3) (i32.const 0) (i32.const 0) (i32.const 8) (i32.const 1)
            (i64.const -1) (i64.const -1) (i32.const 0) (i32.const 8))
        (then (call $exit (i32.const 2))))
      (call $w)
      (drop (call $close (i32.load (i32.const 8))))
      (if (call $open (i32.const 3) (i32.const 0) (i32.const 0) (i32.const 8) (i32.const 0)
            (i64.const -1) (i64.const -1) (i32.const 0) (i32.const 8))
        (then (call $exit (i32.const 4))))
      (call $w)
      (call $w)
      unreachable))`);
  const r = await engine.run(m, { vfs: 'held-trap' });
  assert.equal(r.error?.code, 'GUEST_TRAP', JSON.stringify(r.error));
  const vfs = openNamed('held-trap');
  try {
    const s = vfs.stat('workspace', '/kept.txt');
    assert.equal(Buffer.from(vfs.read(s.ino, 0, s.size)).toString(), 'hellohello');
  } finally {
    vfs.close();
  }
});

test('64 MiB written in 64 KiB fwrites (held, a commit per MiB) and read back by a C guest are whole in the file VFS', async () => {
  const engine = testEngine({ poolSize: 1 });
  const r = await engine.run(fileio, { argv: ['big', '/tmp'], profile: 'network', vfs: 'big-file' });
  assert.equal(r.exitCode, 0, JSON.stringify(r.error) + r.stderr);
  const vfs = openNamed('big-file');
  try {
    const s = vfs.stat('tmp', '/big.bin');
    assert.equal(s.size, 64 * 1024 * 1024);
    for (const i of [0, 15, 16, 17, 511, 1023]) {
      assert.ok(Buffer.from(vfs.read(s.ino, i * 65536, 65536)).equals(Buffer.alloc(65536, i & 0xff)), `chunk ${i}`);
    }
  } finally {
    vfs.close();
  }
});
