// WASI preview 1 over the VFS, call by call: a .wat guest that imports every filesystem call and
// re-exports it, driven from the test over an in-memory VFS (no worker).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Vfs } from '../../src/storage/index.ts';
import { GuestMemory } from '../../src/abi/memory.ts';
import { CappedStream } from '../../src/wasi/output.ts';
import { CallState } from '../../src/abi/signals.ts';
import { ambientWasi } from '../../src/wasi/ambient.ts';
import { MAX_FDS, vfsWasi } from '../../src/wasi/fs.ts';
import { watText } from '../helpers/wat.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';

const SIGS: Record<string, string> = {
  fd_read: 'iiii', fd_write: 'iiii', fd_pread: 'iiiji', fd_pwrite: 'iiiji', fd_seek: 'ijii', fd_tell: 'ii',
  fd_close: 'i', fd_renumber: 'ii', fd_fdstat_get: 'ii', fd_fdstat_set_flags: 'ii', fd_fdstat_set_rights: 'ijj',
  fd_sync: 'i', fd_datasync: 'i', fd_advise: 'ijji', fd_allocate: 'ijj', fd_filestat_get: 'ii',
  fd_filestat_set_size: 'ij', fd_filestat_set_times: 'ijji', fd_prestat_get: 'ii', fd_prestat_dir_name: 'iii',
  fd_readdir: 'iiiji', path_open: 'iiiiijjii', path_filestat_get: 'iiiii', path_filestat_set_times: 'iiiijji',
  path_create_directory: 'iii', path_remove_directory: 'iii', path_unlink_file: 'iii', path_rename: 'iiiiii',
  path_symlink: 'iiiii', path_readlink: 'iiiiii', path_link: 'iiiiiii',
  sock_accept: 'iii', sock_recv: 'iiiiii', sock_send: 'iiiii', sock_shutdown: 'ii', poll_oneoff: 'iiii',
};

const source = `(module
${Object.entries(SIGS).map(([n, s]) => `  (import "wasi_snapshot_preview1" "${n}" (func $${n} (param ${[...s].map((c) => (c === 'j' ? 'i64' : 'i32')).join(' ')}) (result i32)))`).join('\n')}
  (memory (export "memory") 2)
${Object.keys(SIGS).map((n) => `  (export "${n}" (func $${n}))`).join('\n')})`;

const bytesP = watText(source, 'wasi-fs-calls.wat');

type Call = (...a: (number | bigint)[]) => number;
const enc = new TextEncoder();
const dec = new TextDecoder();

const RIGHT = { READ: 1n << 1n, SEEK: 1n << 2n, WRITE: 1n << 6n, READDIR: 1n << 14n };
const ALL = (1n << 30n) - 1n;
/** Everything but FD_WRITE: a directory is never opened for writing (EISDIR). */
const DIR = ALL & ~RIGHT.WRITE;
const O = { CREAT: 1, DIRECTORY: 2, EXCL: 4, TRUNC: 8 };
const SCRATCH = 4096;
const OUT = 256;

async function guest(opts: { readOnly?: boolean } = {}) {
  const vfs = Vfs.open({ file: ':memory:' });
  const memory = new GuestMemory();
  const state = new CallState();
  const stdout = new CappedStream('stdout', 1 << 20, false);
  const stderr = new CappedStream('stderr', 1 << 20, false);
  const wasi = {
    memory, stdout, stderr, argv: ['t'], env: [], state, stdin: new Uint8Array(0), stdinOffset: 0, remainingMs: () => 1000, interrupted: () => false,
  };
  const ambient = ambientWasi(wasi);
  const preopens = [{ guestPath: '/data', volume: 'workspace' as const }, { guestPath: '/tmp', volume: 'tmp' as const }];
  const fs = vfsWasi({ memory, vfs, preopens, state, wasi, ...(opts.readOnly ? { readOnly: true } : {}) }, ambient);
  const inst = new WebAssembly.Instance(new WebAssembly.Module((await bytesP) as Uint8Array<ArrayBuffer>), { wasi_snapshot_preview1: { ...ambient, ...fs } });
  memory.attach(inst.exports.memory as WebAssembly.Memory);
  const w = inst.exports as unknown as Record<string, Call>;
  const view = () => memory.view();
  let strAt = SCRATCH;
  /** Put a string in guest memory: [ptr, len]. */
  const str = (s: string | Uint8Array): [number, number] => {
    const b = typeof s === 'string' ? enc.encode(s) : s;
    const p = strAt;
    memory.write(p, b);
    strAt += b.length + 8;
    if (strAt > 60000) strAt = SCRATCH;
    return [p, b.length];
  };
  const open = (dir: number, path: string, oflags = 0, rights = ALL, fdflags = 0, follow = 1): number | string => {
    const [p, l] = str(path);
    const r = w.path_open!(dir, follow, p, l, oflags, rights, ALL, fdflags, OUT);
    return r === 0 ? memory.u32(OUT) : `errno ${r}`;
  };
  const iov = (data: Uint8Array): number => {
    const [p, l] = str(data);
    const at = strAt;
    memory.setU32(at, p);
    memory.setU32(at + 4, l);
    strAt += 16;
    return at;
  };
  const write = (fd: number, s: string): number => {
    const r = w.fd_write!(fd, iov(enc.encode(s)), 1, OUT);
    return r === 0 ? memory.u32(OUT) : -r;
  };
  const read = (fd: number, n: number): string | number => {
    const buf = 30000;
    memory.setU32(OUT + 16, buf);
    memory.setU32(OUT + 20, n);
    const r = w.fd_read!(fd, OUT + 16, 1, OUT);
    return r === 0 ? dec.decode(memory.copy(buf, memory.u32(OUT))) : -r;
  };
  const path = (fn: string, dir: number, s: string): number => {
    const [p, l] = str(s);
    return w[fn]!(dir, p, l);
  };
  return { vfs, memory, w, view, str, open, write, read, path, stdout, stderr };
}

test('preopens are fds 3.. in order, each a directory with its guest path', async () => {
  const g = await guest();
  assert.equal(g.w.fd_prestat_get!(3, OUT), 0);
  assert.equal(g.view().getUint8(OUT), 0);
  assert.equal(g.memory.u32(OUT + 4), 5);
  assert.equal(g.w.fd_prestat_dir_name!(3, 512, 5), 0);
  assert.equal(dec.decode(g.memory.copy(512, 5)), '/data');
  assert.equal(g.w.fd_prestat_dir_name!(4, 512, 2), 37);
  assert.equal(g.w.fd_prestat_get!(5, OUT), 8);
  assert.equal(g.w.fd_prestat_get!(0, OUT), 8);
  assert.equal(g.w.fd_fdstat_get!(4, OUT), 0);
  assert.equal(g.view().getUint8(OUT), 3);
});

test('create, write, seek, read back; the bytes are in the VFS', async () => {
  const g = await guest();
  const fd = g.open(3, 'hello.txt', O.CREAT | O.EXCL) as number;
  assert.equal(fd, 5);
  assert.equal(g.write(fd, 'hello, vfs'), 10);
  assert.equal(g.w.fd_tell!(fd, OUT), 0);
  assert.equal(g.view().getBigUint64(OUT, true), 10n);
  assert.equal(g.w.fd_seek!(fd, 7n, 0, OUT), 0);
  assert.equal(g.read(fd, 100), 'vfs');
  assert.equal(g.w.fd_seek!(fd, -3n, 2, OUT), 0);
  assert.equal(g.view().getBigUint64(OUT, true), 7n);
  assert.equal(g.w.fd_seek!(fd, -100n, 1, OUT), 28, 'negative → EINVAL');
  assert.equal(g.w.fd_seek!(fd, 0n, 3, OUT), 28, 'bad whence');
  const st = g.vfs.stat('workspace', '/hello.txt');
  assert.equal(dec.decode(g.vfs.read(st.ino, 0, 100)), 'hello, vfs');
  assert.equal(g.open(3, 'hello.txt', O.CREAT | O.EXCL), 'errno 20');
  assert.equal(g.open(3, 'nope.txt'), 'errno 44');
});

test('a read-only open refuses writes; a directory fd refuses file I/O; a file fd refuses path calls', async () => {
  const g = await guest();
  g.vfs.mkdir('workspace', '/d');
  const f = g.open(3, 'f', O.CREAT) as number;
  g.write(f, 'abc');
  const ro = g.open(3, 'f', 0, RIGHT.READ | RIGHT.SEEK) as number;
  assert.equal(g.write(ro, 'x'), -76);
  assert.equal(g.read(ro, 10), 'abc');
  assert.equal(g.w.fd_filestat_set_size!(ro, 0n), 76);
  assert.equal(g.w.fd_fdstat_get!(ro, OUT), 0);
  assert.equal(g.view().getUint8(OUT), 4);
  assert.equal(g.view().getBigUint64(OUT + 8, true), RIGHT.READ | RIGHT.SEEK);
  const wo = g.open(3, 'f', 0, RIGHT.WRITE) as number;
  assert.equal(g.read(wo, 10), -76);
  assert.equal(g.open(3, 'd', O.DIRECTORY), 'errno 31', 'a directory opened with FD_WRITE → EISDIR');
  assert.equal(g.open(3, '.', O.DIRECTORY, RIGHT.READ | RIGHT.WRITE), 'errno 31', 'the preopen itself too');
  assert.equal(g.open(3, 'd', 0, RIGHT.WRITE), 'errno 31', 'with or without O_DIRECTORY');
  const d = g.open(3, 'd', O.DIRECTORY, DIR) as number;
  assert.equal(g.write(d, 'x'), -31);
  assert.equal(g.read(d, 1), -31);
  assert.equal(g.open(f, 'x'), 'errno 54');
  assert.equal(g.open(3, 'f', O.DIRECTORY), 'errno 54');
  // A narrowed directory hands down no more than it holds.
  assert.equal(g.w.fd_fdstat_set_rights!(d, 1n << 13n, RIGHT.READ), 0);
  assert.equal(g.open(d, '.', 0, RIGHT.WRITE), 'errno 76');
  assert.equal(g.w.fd_fdstat_set_rights!(d, ALL, ALL), 76, 'rights never widen');
});

test('a read-only mount refuses every mutation with EROFS', async () => {
  const g = await guest({ readOnly: true });
  assert.equal(g.open(3, 'new', O.CREAT), 'errno 69');
  assert.equal(g.path('path_create_directory', 3, 'x'), 69);
  assert.equal(g.path('path_unlink_file', 3, 'x'), 69);
  assert.equal(g.path('path_remove_directory', 3, 'x'), 69);
  assert.equal(g.open(3, 'x', 0, RIGHT.WRITE), 'errno 69');
  g.vfs.write(g.vfs.open('workspace', '/f', O.CREAT).ino, 0, enc.encode('data'));
  const fd = g.open(3, 'f', 0, RIGHT.READ) as number;
  assert.equal(g.read(fd, 10), 'data');
  assert.equal(g.write(fd, 'x'), -69);
  assert.equal(g.w.fd_filestat_set_times!(fd, 0n, 0n, 10), 69);
  assert.equal(g.w.fd_fdstat_get!(3, OUT), 0);
  assert.equal(g.view().getBigUint64(OUT + 16, true) & RIGHT.WRITE, 0n);
  assert.equal(dec.decode(g.vfs.read(g.vfs.stat('workspace', '/f').ino, 0, 10)), 'data');
});

test('APPEND writes go to the end; pread/pwrite leave the offset alone', async () => {
  const g = await guest();
  const a = g.open(3, 'log', O.CREAT) as number;
  g.write(a, 'one\n');
  const b = g.open(3, 'log', 0, ALL, 1) as number;
  g.write(b, 'two\n');
  g.write(a, 'three\n'); // a's offset is 4: overwrites "two\n" and grows
  g.write(b, 'four\n');
  assert.equal(dec.decode(g.vfs.read(g.vfs.stat('workspace', '/log').ino, 0, 100)), 'one\nthree\nfour\n');
  const r = g.open(3, 'log') as number;
  assert.equal(g.w.fd_pwrite!(r, OUT + 32, 0, 0n, OUT), 0, 'an empty pwrite');
  const [p, l] = g.str('ONE');
  g.memory.setU32(OUT + 32, p);
  g.memory.setU32(OUT + 36, l);
  assert.equal(g.w.fd_pwrite!(r, OUT + 32, 1, 0n, OUT), 0);
  g.memory.setU32(OUT + 32, 20000);
  g.memory.setU32(OUT + 36, 5);
  assert.equal(g.w.fd_pread!(r, OUT + 32, 1, 4n, OUT), 0);
  assert.equal(dec.decode(g.memory.copy(20000, g.memory.u32(OUT))), 'three');
  assert.equal(g.w.fd_tell!(r, OUT), 0);
  assert.equal(g.view().getBigUint64(OUT, true), 0n);
  assert.equal(g.w.fd_pread!(r, OUT + 32, 1, -1n, OUT), 28);
});

test('filestat layouts for file, directory and symlink; sizes, times and allocate', async () => {
  const g = await guest();
  const fd = g.open(3, 'f', O.CREAT) as number;
  g.write(fd, '12345');
  g.vfs.mkdir('workspace', '/d');
  g.vfs.symlink('f', 'workspace', '/ln');
  const stat = (p: string, follow: number) => {
    const [ptr, len] = g.str(p);
    assert.equal(g.w.path_filestat_get!(3, follow, ptr, len, 1024), 0);
    const v = g.view();
    return { dev: v.getBigUint64(1024, true), ino: v.getBigUint64(1032, true), type: v.getUint8(1040), nlink: v.getBigUint64(1048, true), size: v.getBigUint64(1056, true), mtim: v.getBigUint64(1072, true) };
  };
  const f = stat('f', 1);
  assert.deepEqual([f.type, f.nlink, f.size, f.dev], [4, 1n, 5n, 1n]);
  assert.equal(f.ino, BigInt(g.vfs.stat('workspace', '/f').ino));
  assert.equal(stat('d', 1).type, 3);
  assert.equal(stat('ln', 0).type, 7);
  assert.equal(stat('ln', 1).type, 4);
  assert.equal(g.w.fd_filestat_get!(fd, 1024), 0);
  assert.equal(g.view().getBigUint64(1056, true), 5n);
  assert.equal(g.w.fd_filestat_set_size!(fd, 2n), 0);
  assert.equal(stat('f', 1).size, 2n);
  assert.equal(g.w.fd_allocate!(fd, 0n, 10n), 0);
  assert.equal(stat('f', 1).size, 10n);
  assert.equal(g.w.fd_advise!(fd, 0n, 0n, 1), 0);
  const [pp, pl] = g.str('f');
  assert.equal(g.w.path_filestat_set_times!(3, 1, pp, pl, 0n, 5_000_000_000n, 4), 0);
  assert.equal(stat('f', 1).mtim, 5_000_000_000n);
  assert.equal(g.w.fd_filestat_set_times!(fd, 1n, 0n, 3), 28, 'ATIM with ATIM_NOW');
  assert.equal(g.w.fd_filestat_get!(1, 1024), 0);
  assert.equal(g.view().getUint8(1040), 2);
});

test('fd_readdir: . and .. first, cookies resume, a full buffer truncates the last entry', async () => {
  const g = await guest();
  for (const n of ['alpha', 'beta', 'gamma']) g.vfs.open('workspace', `/${n}`, O.CREAT);
  g.vfs.mkdir('workspace', '/sub');
  const list = (fd: number, size: number, cookie: bigint) => {
    assert.equal(g.w.fd_readdir!(fd, 8192, size, cookie, OUT), 0);
    const used = g.memory.u32(OUT);
    const v = g.view();
    const out: { name: string; next: bigint; type: number }[] = [];
    for (let at = 0; at + 24 <= used;) {
      const len = v.getUint32(8192 + at + 16, true);
      if (at + 24 + len > used) break;
      out.push({ next: v.getBigUint64(8192 + at, true), type: v.getUint8(8192 + at + 20), name: dec.decode(g.memory.copy(8192 + at + 24, len)) });
      at += 24 + len;
    }
    return { used, out };
  };
  const all = list(3, 4096, 0n);
  assert.deepEqual(all.out.map((e) => e.name), ['.', '..', 'alpha', 'beta', 'gamma', 'sub']);
  assert.deepEqual(all.out.map((e) => e.type), [3, 3, 4, 4, 4, 3]);
  assert.ok(all.used < 4096);
  const small = list(3, 60, 0n);
  assert.equal(small.used, 60, 'a full buffer says "there may be more"');
  assert.deepEqual(small.out.map((e) => e.name), ['.', '..']);
  const rest = list(3, 4096, small.out[1]!.next);
  assert.deepEqual(rest.out.map((e) => e.name), ['alpha', 'beta', 'gamma', 'sub']);
  const tail = list(3, 4096, rest.out[2]!.next);
  assert.deepEqual(tail.out.map((e) => e.name), ['sub']);
  const sub = g.open(3, 'sub', O.DIRECTORY, DIR) as number;
  assert.deepEqual(list(sub, 4096, 0n).out.map((e) => e.name), ['.', '..']);
  const file = g.open(3, 'alpha') as number;
  assert.equal(g.w.fd_readdir!(file, 8192, 100, 0n, OUT), 54);
});

test('directories, rename across two dir fds, symlink/readlink, link, unlink', async () => {
  const g = await guest();
  assert.equal(g.path('path_create_directory', 3, 'a'), 0);
  assert.equal(g.path('path_create_directory', 3, 'a'), 20);
  assert.equal(g.path('path_create_directory', 3, 'a/b'), 0);
  assert.equal(g.path('path_remove_directory', 3, 'a'), 55);
  const fd = g.open(3, 'a/b/f', O.CREAT) as number;
  g.write(fd, 'x');
  const b = g.open(3, 'a/b', O.DIRECTORY, DIR) as number;
  const [p1, l1] = g.str('f');
  const [p2, l2] = g.str('moved');
  assert.equal(g.w.path_rename!(b, p1, l1, 3, p2, l2), 0);
  assert.equal(g.vfs.stat('workspace', '/moved').size, 1);
  const [t, tl] = g.str('../../moved');
  const [s, sl] = g.str('link');
  assert.equal(g.w.path_symlink!(t, tl, b, s, sl), 0);
  const [rp, rl] = g.str('link');
  assert.equal(g.w.path_readlink!(b, rp, rl, 2048, 100, OUT), 0);
  assert.equal(dec.decode(g.memory.copy(2048, g.memory.u32(OUT))), '../../moved');
  assert.equal(g.w.path_readlink!(b, rp, rl, 2048, 3, OUT), 0);
  assert.equal(g.memory.u32(OUT), 3, 'truncated to the buffer');
  assert.equal(g.read(g.open(3, 'a/b/link') as number, 10), 'x');
  assert.equal(g.open(b, 'link'), 'errno 76', 'the link climbs above b: not from b');
  const [h, hl] = g.str('hard');
  assert.equal(g.w.path_link!(3, 0, p2, l2, b, h, hl), 0);
  assert.equal(g.vfs.stat('workspace', '/moved').nlink, 2);
  assert.equal(g.path('path_unlink_file', 3, 'moved'), 0);
  assert.equal(g.vfs.stat('workspace', '/a/b/hard').nlink, 1);
  assert.equal(g.path('path_unlink_file', 3, 'a'), 31);
  const [x, xl] = g.str('x');
  assert.equal(g.w.path_rename!(3, p2, l2, 4, x, xl), 44);
  g.vfs.open('workspace', '/y', O.CREAT);
  const [yp, yl] = g.str('y');
  assert.equal(g.w.path_rename!(3, yp, yl, 4, x, xl), 75, 'across volumes → EXDEV');
});

test('paths stay beneath their descriptor: .., absolute, symlinks out, NUL, bad UTF-8, very long', async () => {
  const g = await guest();
  g.vfs.mkdir('workspace', '/etc');
  g.vfs.open('workspace', '/etc/passwd', O.CREAT);
  g.vfs.write(g.vfs.stat('workspace', '/etc/passwd').ino, 0, enc.encode('vfs-only'));
  assert.equal(g.open(3, '../../../../etc/passwd'), 'errno 76');
  assert.equal(g.read(g.open(3, 'etc/../etc/passwd') as number, 100), 'vfs-only', '.. that stays beneath is fine');
  assert.equal(g.open(3, '/etc/passwd'), 'errno 76');
  g.vfs.symlink('/etc', 'workspace', '/out');
  assert.equal(g.open(3, 'out/passwd'), 'errno 76', 'an absolute symlink target is never rebased');
  g.vfs.symlink('../../../../../etc/passwd', 'workspace', '/up');
  assert.equal(g.open(3, 'up'), 'errno 76');
  const etc = g.open(3, 'etc', O.DIRECTORY, DIR) as number;
  assert.equal(g.open(etc, '../etc/passwd'), 'errno 76', 'not even back into itself');
  assert.equal(g.open(4, '../etc/passwd'), 'errno 76', 'the tmp volume cannot see workspace');
  assert.equal(g.open(3, 'etc\0/passwd'), 'errno 28');
  const [bp, bl] = g.str(new Uint8Array([0x66, 0xff, 0xfe]));
  assert.equal(g.w.path_open!(3, 0, bp, bl, 0, ALL, ALL, 0, OUT), 25);
  assert.equal(g.open(3, 'a/'.repeat(3000)), 'errno 37');
  g.vfs.symlink('loop', 'workspace', '/loop');
  assert.equal(g.open(3, 'loop'), 'errno 32');
  assert.equal(g.open(3, 'loop', 0, ALL, 0, 0), 'errno 32');
});

test('bad guest pointers are EFAULT, never a host crash', async () => {
  const g = await guest();
  const big = 0x7fff_fff0;
  assert.equal(g.w.path_open!(3, 0, big, 10, 0, ALL, ALL, 0, OUT), 21);
  assert.equal(g.w.path_open!(3, 0, 0, 1, 1, ALL, ALL, 0, big), 21);
  const fd = g.open(3, 'f', O.CREAT) as number;
  g.memory.setU32(OUT + 16, big);
  g.memory.setU32(OUT + 20, 100);
  assert.equal(g.w.fd_read!(fd, OUT + 16, 1, OUT), 21);
  assert.equal(g.w.fd_write!(fd, OUT + 16, 1, OUT), 21);
  assert.equal(g.w.fd_readdir!(3, big, 100, 0n, OUT), 21);
  assert.equal(g.w.fd_filestat_get!(fd, big), 21);
  assert.equal(g.w.fd_prestat_dir_name!(3, big, 5), 21);
  assert.equal(g.w.fd_seek!(fd, 0n, 0, big), 21);
});

test('the descriptor table is bounded (EMFILE); close and renumber', async () => {
  const g = await guest();
  g.vfs.open('workspace', '/f', O.CREAT);
  const fds: number[] = [];
  for (;;) {
    const r = g.open(3, 'f');
    if (typeof r === 'string') {
      assert.equal(r, 'errno 33');
      break;
    }
    fds.push(r);
  }
  assert.equal(fds.length, MAX_FDS - 2);
  assert.equal(g.open(3, 'new', O.CREAT), 'errno 33');
  assert.throws(() => g.vfs.stat('workspace', '/new'), /ENOENT/, 'no side effect when the table is full');
  assert.equal(g.w.fd_close!(fds[0]!), 0);
  assert.equal(g.w.fd_close!(fds[0]!), 8);
  assert.equal(g.open(3, 'f'), fds[0]);
  assert.equal(g.w.fd_renumber!(fds[1]!, fds[2]!), 0);
  assert.equal(g.w.fd_close!(fds[1]!), 8);
  assert.equal(g.w.fd_close!(fds[2]!), 0);
  assert.equal(g.w.fd_renumber!(fds[2]!, 99_999), 8, 'renumbering onto a closed descriptor → EBADF');
});

test('fds 0-2 are delegated to the ambient stdio calls', async () => {
  const g = await guest();
  assert.equal(g.write(1, 'to stdout'), 9);
  assert.equal(dec.decode(g.stdout.take()), 'to stdout');
  assert.equal(g.w.fd_seek!(1, 0n, 0, OUT), 70);
  assert.equal(g.w.fd_fdstat_get!(2, OUT), 0);
  assert.equal(g.view().getUint8(OUT), 2);
  assert.equal(g.w.fd_close!(7), 8);
  assert.equal(g.read(0, 10), '');
});

test('fd_renumber moves stdio descriptors: the stream follows the number, the old number is closed', async () => {
  const g = await guest();
  const f = g.open(3, 'f', O.CREAT) as number;
  assert.equal(g.w.fd_renumber!(1, f), 0, 'stdout onto a file descriptor');
  assert.equal(g.write(f, 'via renumbered stdout'), 21);
  assert.equal(dec.decode(g.stdout.take()), 'via renumbered stdout');
  assert.equal(g.w.fd_fdstat_get!(1, OUT), 8, 'fd 1 is closed');
  assert.equal(g.vfs.stat('workspace', '/f').size, 0, 'nothing reached the file that fd used to be');
  const next = g.open(3, 'f') as number;
  assert.notEqual(next, f, 'a new descriptor never takes a number stdio holds');
  assert.equal(g.w.fd_renumber!(next, 2), 0, 'a file onto stderr');
  assert.equal(g.write(2, 'into the file'), 13);
  assert.equal(g.vfs.stat('workspace', '/f').size, 13);
  assert.equal(g.stderr.take().length, 0);
  assert.equal(g.w.fd_close!(0), 0);
  assert.equal(g.w.fd_close!(0), 8);
});

test('socket calls find no socket: ENOTSOCK on an open descriptor, EBADF otherwise', async () => {
  const g = await guest();
  for (const name of ['sock_shutdown', 'sock_accept', 'sock_recv', 'sock_send'] as const) {
    const fn = g.w[name] as unknown as (...a: number[]) => number;
    assert.equal(fn(1, 0, OUT, OUT, OUT, OUT), 57, `${name} on stdout`);
    assert.equal(fn(3, 0, OUT, OUT, OUT, OUT), 57, `${name} on a preopen`);
    assert.equal(fn(77, 0, OUT, OUT, OUT, OUT), 8, `${name} on a closed fd`);
  }
});

test('path_symlink: a dangling new name ending in / is ENOENT; an existing one EEXIST or ENOTDIR', async () => {
  const g = await guest();
  const sym = (target: string, name: string): number => {
    const [tp, tl] = g.str(target);
    const [np, nl] = g.str(name);
    return g.w.path_symlink!(tp, tl, 3, np, nl);
  };
  assert.equal(sym('source', 'target/'), 44);
  assert.equal(sym('source', 'target'), 0);
  assert.equal(g.path('path_unlink_file', 3, 'target'), 0);
  assert.equal(g.path('path_create_directory', 3, 'dir'), 0);
  assert.equal(sym('source', 'dir/'), 20);
  g.vfs.open('workspace', '/file', O.CREAT);
  assert.equal(sym('source', 'file/'), 54);
  assert.equal(sym('source', 'file'), 20);
});

test('poll_oneoff: stdio descriptors are ready at once (stdin at its end says HANGUP), other descriptors EBADF, one event each', async () => {
  const g = await guest();
  const SUBS = 16384;
  const EVENTS = 20480;
  const v = g.view();
  const sub = (i: number, userdata: bigint, tag: number, fd: number, timeout = 0n): void => {
    const at = SUBS + i * 48;
    v.setBigUint64(at, userdata, true);
    v.setUint8(at + 8, tag);
    v.setUint32(at + 16, fd, true);
    v.setBigUint64(at + 24, timeout, true);
    v.setUint16(at + 40, 0, true);
  };
  sub(0, 10n, 1, 0);
  sub(1, 11n, 2, 1);
  sub(2, 12n, 1, 3);
  sub(3, 13n, 0, 1, 3_600_000_000_000n); // a one-hour monotonic clock: not waited for
  const t = performance.now();
  assert.equal(g.w.poll_oneoff!(SUBS, EVENTS, 4, OUT), 0);
  assert.ok(performance.now() - t < LOAD_SLACK_MS);
  assert.equal(g.memory.u32(OUT), 3);
  const ev = (k: number) => ({
    userdata: v.getBigUint64(EVENTS + k * 32, true), error: v.getUint16(EVENTS + k * 32 + 8, true),
    type: v.getUint8(EVENTS + k * 32 + 10), nbytes: v.getBigUint64(EVENTS + k * 32 + 16, true), flags: v.getUint16(EVENTS + k * 32 + 24, true),
  });
  assert.deepEqual(ev(0), { userdata: 10n, error: 0, type: 1, nbytes: 0n, flags: 1 });
  assert.deepEqual(ev(1), { userdata: 11n, error: 0, type: 2, nbytes: 0n, flags: 0 });
  assert.deepEqual(ev(2), { userdata: 12n, error: 8, type: 1, nbytes: 0n, flags: 0 });
  const f = g.open(3, 'f', O.CREAT) as number;
  assert.equal(g.w.fd_renumber!(0, f), 0);
  sub(0, 20n, 1, f);
  sub(1, 21n, 1, 0);
  assert.equal(g.w.poll_oneoff!(SUBS, EVENTS, 2, OUT), 0);
  assert.deepEqual([ev(0), ev(1)].map((e) => [e.userdata, e.error, e.flags]), [[20n, 0, 1], [21n, 8, 0]], 'stdin renumbered: ready at its new number, fd 0 closed');
  sub(0, 1n, 9, 0);
  assert.equal(g.w.poll_oneoff!(SUBS, EVENTS, 1, OUT), 28, 'an unknown event type → EINVAL');
  assert.equal(g.w.poll_oneoff!(SUBS, EVENTS, 0, OUT), 28, 'no subscriptions → EINVAL');
});
