// Real wasi-libc programs over WASI-over-VFS, in this process: the built-in commands
// (commands/bin/*.wasm) doing real file work, and an escape attempt that must reach nothing outside
// the VFS (test/fixtures/c/escape.c).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Vfs } from '../../src/storage/index.ts';
import { GuestMemory } from '../../src/abi/memory.ts';
import { CappedStream } from '../../src/wasi/output.ts';
import { CallState, ExitSignal } from '../../src/abi/signals.ts';
import { ambientWasi } from '../../src/wasi/ambient.ts';
import { vfsWasi, type Preopen } from '../../src/wasi/fs.ts';
import { cGuest } from '../helpers/wat.ts';

const dec = new TextDecoder();
const modules = new Map<string, WebAssembly.Module>();
const command = (name: string) => new Uint8Array(readFileSync(new URL(`../../commands/bin/${name}.wasm`, import.meta.url)));

function run(wasm: Uint8Array, key: string, vfs: Vfs, argv: string[], preopens: readonly Preopen[], stdin = '') {
  let mod = modules.get(key);
  if (!mod) modules.set(key, (mod = new WebAssembly.Module(wasm as Uint8Array<ArrayBuffer>)));
  const memory = new GuestMemory();
  const state = new CallState();
  const stdout = new CappedStream('stdout', 1 << 20, false);
  const stderr = new CappedStream('stderr', 1 << 20, false);
  const wctx = {
    memory, stdout, stderr, argv, env: [], state, stdin: new TextEncoder().encode(stdin), stdinOffset: 0, remainingMs: () => 10_000, interrupted: () => false,
  };
  const ambient = ambientWasi(wctx);
  const imports = { ...ambient, ...vfsWasi({ memory, vfs, preopens, state }, ambient) };
  const inst = new WebAssembly.Instance(mod, { wasi_snapshot_preview1: imports });
  memory.attach(inst.exports.memory as WebAssembly.Memory);
  let status = 0;
  try {
    (inst.exports._start as () => void)();
  } catch (e) {
    if (!(e instanceof ExitSignal)) throw e;
    status = e.code;
  }
  return { status, stdout: dec.decode(stdout.take()), stderr: dec.decode(stderr.take()) };
}

const ROOT: readonly Preopen[] = [{ guestPath: '/', volume: 'workspace' }];

function shell() {
  const vfs = Vfs.open({ file: ':memory:' });
  const sh = (name: string, ...args: string[]) => run(command(name), name, vfs, [name, ...args], ROOT);
  const ok = (name: string, ...args: string[]) => {
    const r = sh(name, ...args);
    assert.equal(r.status, 0, `${name} ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const put = (path: string, text: string) => {
    const st = vfs.open('workspace', path, 1 | 8);
    vfs.write(st.ino, 0, new TextEncoder().encode(text));
  };
  const get = (path: string) => dec.decode(vfs.read(vfs.stat('workspace', path).ino, 0, 1 << 20));
  return { vfs, sh, ok, put, get };
}

test('mkdir -p, cp, ls, cat, wc: real commands over the VFS', () => {
  const s = shell();
  s.ok('mkdir', '-p', 'a/b/c');
  assert.equal(s.vfs.stat('workspace', '/a/b/c').kind, 'dir');
  s.put('/notes.txt', 'one\ntwo\nthree\n');
  s.ok('cp', 'notes.txt', 'a/b/c/copy.txt');
  assert.equal(s.get('/a/b/c/copy.txt'), 'one\ntwo\nthree\n');
  assert.equal(s.ok('cat', '/a/b/c/copy.txt'), 'one\ntwo\nthree\n');
  assert.equal(s.ok('ls'), 'a\nnotes.txt\n');
  assert.equal(s.ok('ls', '-a', 'a/b/c'), '.\n..\ncopy.txt\n');
  const long = s.ok('ls', '-l', 'a/b/c').split('\n');
  assert.match(long[0] ?? '', /^-rw-r--r-- 1 14 \d{4}-\d\d-\d\d \d\d:\d\d copy\.txt$/);
  assert.match(s.ok('ls', '-l', '/a').split('\n')[0] ?? '', /^drwxr-xr-x \d+ \d+ .* b$/);
  assert.equal(s.ok('wc', '-l', 'notes.txt').trim(), '3 notes.txt');
  assert.equal(s.sh('cat', 'missing').status, 1);
  assert.deepEqual(s.sh('ls', 'nope'), { status: 2, stdout: '', stderr: "ls: cannot access 'nope': No such file or directory\n" });
  assert.equal(s.sh('mkdir', 'a').status, 1);
});

test('mv, rm -r, grep and sha256sum over the VFS', () => {
  const s = shell();
  s.ok('mkdir', '-p', 'src/deep/er');
  s.put('/src/deep/er/f.txt', 'needle\nhay\nneedle again\n');
  s.put('/src/g.txt', 'abc');
  s.ok('mv', 'src', 'dst');
  assert.throws(() => s.vfs.stat('workspace', '/src'), /ENOENT/);
  assert.equal(s.get('/dst/deep/er/f.txt'), 'needle\nhay\nneedle again\n');
  assert.equal(s.ok('grep', 'needle', 'dst/deep/er/f.txt'), 'needle\nneedle again\n');
  assert.equal(s.ok('sha256sum', 'dst/g.txt'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  dst/g.txt\n');
  s.ok('mv', 'dst/g.txt', 'dst/deep/h.txt');
  assert.equal(s.get('/dst/deep/h.txt'), 'abc');
  assert.notEqual(s.sh('rm', 'dst').status, 0, 'a directory needs -r');
  s.ok('rm', '-r', 'dst');
  assert.throws(() => s.vfs.stat('workspace', '/dst'), /ENOENT/);
  assert.equal(s.ok('ls', '-a'), '.\n..\n');
});

test('a large file copies intact through cp and hashes the same', () => {
  const s = shell();
  const big = Array.from({ length: 40_000 }, (_, i) => `line ${i}\n`).join('');
  s.put('/big', big);
  s.ok('cp', 'big', 'big2');
  assert.equal(s.get('/big2'), big);
  const [h1] = s.ok('sha256sum', 'big').split(' ');
  const [h2] = s.ok('sha256sum', 'big2').split(' ');
  assert.equal(h1, h2);
  assert.equal(s.ok('wc', '-c', 'big2').trim(), `${big.length} big2`);
});

test('escape attempts from a C guest reach nothing outside the VFS; its /data write lands in the VFS', () => {
  const vfs = Vfs.open({ file: ':memory:' });
  const preopens: Preopen[] = [{ guestPath: '/data', volume: 'workspace' }, { guestPath: '/tmp', volume: 'tmp' }];
  const r = run(cGuest('escape'), 'escape', vfs, ['escape'], preopens);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const lines = Object.fromEntries(r.stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf(':')), l]));
  // Nothing from the host: no passwd entries, no environment, no host directory names.
  assert.doesNotMatch(r.stdout, /root:x?:0:|daemon:|nologin|PATH=|HOME=/);
  assert.doesNotMatch(r.stdout, /\b(bin|usr|var|proc|etc|home) \b|\b(usr|var|proc|home)$/m);
  for (const k of ['absolute', 'dotdot', 'data-dotdot', 'proc', 'symlink-abs', 'symlink-rel', 'cwd-dotdot', 'list-root']) {
    assert.match(lines[k] ?? `${k}: missing`, /-> errno \d+$/, lines[k]);
  }
  assert.match(lines['raw-absolute'] ?? '', /-> errno 76$/);
  assert.match(lines['raw-dotdot'] ?? '', /-> errno 76$/, '.. above the preopen is ENOTCAPABLE');
  assert.match(lines['raw-symlink'] ?? '', /-> errno 44$/, 'the absolute link was never made');
  assert.equal(lines['symlink-abs-make'], 'symlink-abs-make: 76', 'a symlink to an absolute target is refused');
  assert.equal(lines['symlink-rel-make'], 'symlink-rel-make: 0');
  // The climbing link exists but cannot be followed from the preopen; `/data/../..` is refused.
  assert.match(lines['symlink-rel'] ?? '', /-> errno 76$/);
  assert.match(lines['list-data-up'] ?? '', /-> errno 76$/);
  assert.match(lines['list-data'] ?? '', /-> LIST \. \.\. up-link ok\.txt$/);
  assert.match(r.stdout, /done\n$/);
  assert.equal(dec.decode(vfs.read(vfs.stat('workspace', '/ok.txt').ino, 0, 100)), 'written from inside the sandbox\n');
  assert.throws(() => vfs.readlink('workspace', '/etc-link'), /ENOENT/);
  assert.throws(() => vfs.stat('tmp', '/ok.txt'), /ENOENT/);
});
