// A tiny WASI guest for path-escape tests: optionally opens directory DIR from the `/` preopen
// (fd 3), then calls path_open or path_symlink relative to that descriptor, and returns the errno
// (`1000 + errno` when opening DIR itself failed). Invoked as the export `run`.
import { watText } from './wat.ts';

const ALL = (1n << 29n) - 1n;
const NO_WRITE = ALL & ~(1n << 6n);
const bytes = (s: string): string => [...new TextEncoder().encode(s)].map((b) => `\\${b.toString(16).padStart(2, '0')}`).join('');

export function pathGuest(op: { dir?: string; open?: string; symlink?: { target: string; name: string }; follow?: boolean }): Promise<Uint8Array> {
  const dir = op.dir ?? '';
  const a = op.open ?? op.symlink?.target ?? '';
  const b = op.symlink?.name ?? '';
  const enter = dir === '' ? '' : `
    (local.set $e (call $open (i32.const 3) (i32.const 0) (i32.const 1024) (i32.const ${new TextEncoder().encode(dir).length})
      (i32.const 2) (i64.const ${NO_WRITE}) (i64.const ${ALL}) (i32.const 0) (i32.const 0)))
    (if (local.get $e) (then (return (i32.add (i32.const 1000) (local.get $e)))))
    (local.set $fd (i32.load (i32.const 0)))`;
  const call = op.symlink
    ? `(call $symlink (i32.const 2048) (i32.const ${new TextEncoder().encode(a).length}) (local.get $fd) (i32.const 3072) (i32.const ${new TextEncoder().encode(b).length}))`
    : `(call $open (local.get $fd) (i32.const ${op.follow === false ? 0 : 1}) (i32.const 2048) (i32.const ${new TextEncoder().encode(a).length})
        (i32.const 0) (i64.const ${NO_WRITE}) (i64.const ${ALL}) (i32.const 0) (i32.const 0))`;
  return watText(`(module
  (import "wasi_snapshot_preview1" "path_open" (func $open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_symlink" (func $symlink (param i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "${bytes(dir)}")
  (data (i32.const 2048) "${bytes(a)}")
  (data (i32.const 3072) "${bytes(b)}")
  (func (export "run") (result i32) (local $e i32) (local $fd i32)
    (local.set $fd (i32.const 3))${enter}
    ${call}))`, 'wasi-path-guest.wat');
}
