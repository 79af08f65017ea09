// WASI preopens that are image mounts (a toolchain's sysroot): a read-only VFS of their own under
// the guest's, driven call by call through vfsWasi over a real image file opened as workers open
// it (imagePreopens → Vfs.openImage). Reads work; every mutation beneath the image is EROFS (69);
// a rename or link between the image and the guest's VFS is EXDEV (75); a filestat beneath the
// image reports the image's own device, so no (dev, ino) of it equals one of the guest's files.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { O_CREAT, Vfs } from '../../src/storage/index.ts';
import { GuestMemory } from '../../src/abi/memory.ts';
import { CappedStream } from '../../src/wasi/output.ts';
import { CallState } from '../../src/abi/signals.ts';
import { ambientWasi } from '../../src/wasi/ambient.ts';
import { vfsWasi } from '../../src/wasi/fs.ts';
import { imagePreopens } from '../../src/engine/worker/images.ts';
import { watText } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

const SIGS: Record<string, string> = {
  fd_read: 'iiii', fd_write: 'iiii', fd_pwrite: 'iiiji', fd_close: 'i', fd_allocate: 'ijj', fd_filestat_get: 'ii',
  fd_filestat_set_size: 'ij', fd_filestat_set_times: 'ijji', path_open: 'iiiiijjii', path_filestat_get: 'iiiii',
  path_filestat_set_times: 'iiiijji', path_create_directory: 'iii', path_remove_directory: 'iii', path_unlink_file: 'iii',
  path_rename: 'iiiiii', path_symlink: 'iiiii', path_link: 'iiiiiii',
};
const source = `(module
${Object.entries(SIGS).map(([n, s]) => `  (import "wasi_snapshot_preview1" "${n}" (func $${n} (param ${[...s].map((c) => (c === 'j' ? 'i64' : 'i32')).join(' ')}) (result i32)))`).join('\n')}
  (memory (export "memory") 2)
${Object.keys(SIGS).map((n) => `  (export "${n}" (func $${n}))`).join('\n')})`;
const bytesP = watText(source, 'wasi-image-mount-calls.wat');

type Call = (...a: (number | bigint)[]) => number;
const enc = new TextEncoder();
const dec = new TextDecoder();
const RIGHT = { READ: 1n << 1n, SEEK: 1n << 2n, WRITE: 1n << 6n, PATH_OPEN: 1n << 13n, READDIR: 1n << 14n, PATH_FILESTAT_GET: 1n << 18n, FILESTAT_GET: 1n << 21n };
const ALL = (1n << 30n) - 1n;
const O = { CREAT: 1, DIRECTORY: 2, EXCL: 4, TRUNC: 8 };
const E = { ROFS: 69, XDEV: 75 };
const OUT = 256;
const WORK = 3, IMAGE = 4;

/** An image holding include/stdio.h, built the way toolchain.ts builds the sysroot's. */
const imageFile = (() => {
  const file = join(tempDir('membrane-image-'), 'image.sqlite');
  const v = Vfs.open({ file });
  v.mkdir('workspace', 'include');
  const st = v.open('workspace', 'include/stdio.h', O_CREAT);
  v.write(st.ino, 0, enc.encode('int puts(const char *);\n'));
  v.close();
  return file;
})();

async function guest() {
  const vfs = Vfs.open({ file: ':memory:' });
  const memory = new GuestMemory();
  const state = new CallState();
  const wasi = {
    memory, stdout: new CappedStream('stdout', 1 << 20, false), stderr: new CappedStream('stderr', 1 << 20, false),
    argv: ['t'], env: [], state, stdin: new Uint8Array(0), stdinOffset: 0, remainingMs: () => 1000, interrupted: () => false,
  };
  const ambient = ambientWasi(wasi);
  const preopens = [{ guestPath: '/work', volume: 'workspace' as const }, ...imagePreopens([{ file: imageFile, guestPath: '/sysroot' }])];
  const fs = vfsWasi({ memory, vfs, preopens, state, wasi }, ambient);
  const inst = new WebAssembly.Instance(new WebAssembly.Module((await bytesP) as Uint8Array<ArrayBuffer>), { wasi_snapshot_preview1: { ...ambient, ...fs } });
  memory.attach(inst.exports.memory as WebAssembly.Memory);
  const w = inst.exports as unknown as Record<string, Call>;
  let at = 4096;
  const str = (s: string | Uint8Array): [number, number] => {
    const b = typeof s === 'string' ? enc.encode(s) : s;
    const p = at;
    memory.write(p, b);
    at += b.length + 8;
    if (at > 60000) at = 4096;
    return [p, b.length];
  };
  const open = (dir: number, path: string, oflags = 0, rights = ALL): number | string => {
    const [p, l] = str(path);
    const r = w.path_open!(dir, 1, p, l, oflags, rights, ALL, 0, OUT);
    return r === 0 ? memory.u32(OUT) : `errno ${r}`;
  };
  const iov = (data: string): number => {
    const [p, l] = str(data);
    const v = at;
    memory.setU32(v, p);
    memory.setU32(v + 4, l);
    at += 16;
    return v;
  };
  const path = (fn: string, dir: number, s: string): number => {
    const [p, l] = str(s);
    return w[fn]!(dir, p, l);
  };
  const two = (fn: 'path_rename' | 'path_link', a: number, pa: string, b: number, pb: string): number => {
    const [p1, l1] = str(pa);
    const [p2, l2] = str(pb);
    return fn === 'path_rename' ? w.path_rename!(a, p1, l1, b, p2, l2) : w.path_link!(a, 0, p1, l1, b, p2, l2);
  };
  /** (dev, ino) of a path beneath `dir`. */
  const devIno = (dir: number, s: string): [bigint, bigint] => {
    const [p, l] = str(s);
    assert.equal(w.path_filestat_get!(dir, 1, p, l, OUT), 0);
    const v = memory.view();
    return [v.getBigUint64(OUT, true), v.getBigUint64(OUT + 8, true)];
  };
  return { vfs, memory, w, open, iov, path, two, devIno };
}

test('reads beneath the image work: path_open read-only and fd_read give the image\'s bytes', async () => {
  const g = await guest();
  const fd = g.open(IMAGE, 'include/stdio.h', 0, RIGHT.READ | RIGHT.SEEK) as number;
  assert.equal(typeof fd, 'number', String(fd));
  const buf = 30000;
  g.memory.setU32(OUT + 16, buf);
  g.memory.setU32(OUT + 20, 100);
  assert.equal(g.w.fd_read!(fd, OUT + 16, 1, OUT), 0);
  assert.equal(dec.decode(g.memory.copy(buf, g.memory.u32(OUT))), 'int puts(const char *);\n');
});

test('opening for write, creating or truncating beneath the image is EROFS', async () => {
  const g = await guest();
  assert.equal(g.open(IMAGE, 'evil.o', O.CREAT), `errno ${E.ROFS}`);
  assert.equal(g.open(IMAGE, 'include/evil.h', O.CREAT | O.EXCL, RIGHT.READ), `errno ${E.ROFS}`);
  assert.equal(g.open(IMAGE, 'include/stdio.h', 0, RIGHT.READ | RIGHT.WRITE), `errno ${E.ROFS}`);
  assert.equal(g.open(IMAGE, 'include/stdio.h', O.TRUNC, RIGHT.READ), `errno ${E.ROFS}`);
});

test('a descriptor opened read-only beneath the image: every write call is EROFS', async () => {
  const g = await guest();
  const fd = g.open(IMAGE, 'include/stdio.h', 0, RIGHT.READ | RIGHT.SEEK) as number;
  assert.equal(g.w.fd_write!(fd, g.iov('#define EVIL\n'), 1, OUT), E.ROFS, 'fd_write');
  assert.equal(g.w.fd_pwrite!(fd, g.iov('#define EVIL\n'), 1, 0n, OUT), E.ROFS, 'fd_pwrite');
  assert.equal(g.w.fd_allocate!(fd, 0n, 1000n), E.ROFS, 'fd_allocate');
  assert.equal(g.w.fd_filestat_set_size!(fd, 0n), E.ROFS, 'fd_filestat_set_size');
  assert.equal(g.w.fd_filestat_set_times!(fd, 0n, 0n, 2), E.ROFS, 'fd_filestat_set_times');
});

test('mkdir, rmdir, unlink, symlink, set-times and a rename within the image are EROFS', async () => {
  const g = await guest();
  assert.equal(g.path('path_create_directory', IMAGE, 'evil'), E.ROFS, 'mkdir');
  assert.equal(g.path('path_remove_directory', IMAGE, 'include'), E.ROFS, 'rmdir');
  assert.equal(g.path('path_unlink_file', IMAGE, 'include/stdio.h'), E.ROFS, 'unlink');
  const [t, tl] = [8000, 3];
  g.memory.write(t, enc.encode('abc'));
  const [p, l] = [9000, 4];
  g.memory.write(p, enc.encode('link'));
  assert.equal(g.w.path_symlink!(t, tl, IMAGE, p, l), E.ROFS, 'symlink');
  g.memory.write(p, enc.encode('include/stdio.h'));
  assert.equal(g.w.path_filestat_set_times!(IMAGE, 1, p, 15, 0n, 0n, 2), E.ROFS, 'set times');
  assert.equal(g.two('path_rename', IMAGE, 'include/stdio.h', IMAGE, 'include/old.h'), E.ROFS, 'rename');
  // Beneath a directory opened inside the image, the same.
  const dir = g.open(IMAGE, "include", O.DIRECTORY, RIGHT.PATH_OPEN | RIGHT.READDIR | RIGHT.PATH_FILESTAT_GET) as number;
  assert.equal(typeof dir, 'number', String(dir));
  assert.equal(g.path('path_unlink_file', dir, 'stdio.h'), E.ROFS, 'unlink beneath an opened directory');
  assert.equal(g.open(dir, 'evil.h', O.CREAT), `errno ${E.ROFS}`);
  // And the image is untouched.
  const img = Vfs.openImage(imageFile);
  try {
    assert.equal(dec.decode(img.read(img.stat('workspace', 'include/stdio.h').ino, 0, 100)), 'int puts(const char *);\n');
    assert.deepEqual(img.readdir(img.stat('workspace', 'include').ino).map((e) => e.name).filter((n) => n !== '.' && n !== '..').sort(), ['stdio.h']);
  } finally {
    img.close();
  }
});

test('rename and link between the image and the guest\'s VFS are EXDEV, both ways', async () => {
  const g = await guest();
  const f = g.open(WORK, 'mine.h', O.CREAT) as number;
  assert.equal(typeof f, 'number');
  assert.equal(g.two('path_rename', WORK, 'mine.h', IMAGE, 'include/stdio.h'), E.XDEV, 'rename guest → image');
  assert.equal(g.two('path_rename', IMAGE, 'include/stdio.h', WORK, 'stolen.h'), E.XDEV, 'rename image → guest');
  assert.equal(g.two('path_link', IMAGE, 'include/stdio.h', WORK, 'linked.h'), E.XDEV, 'link image → guest');
  assert.equal(g.two('path_link', WORK, 'mine.h', IMAGE, 'include/mine.h'), E.XDEV, 'link guest → image');
  assert.throws(() => g.vfs.stat('workspace', 'stolen.h'));
  assert.throws(() => g.vfs.stat('workspace', 'linked.h'));
});

test('filestat beneath the image reports the image\'s device (16), never the workspace\'s', async () => {
  const g = await guest();
  assert.equal(typeof g.open(WORK, 'include', O.CREAT), 'number'); // a guest file, likely sharing an inode number
  const [imgDev, imgIno] = g.devIno(IMAGE, 'include/stdio.h');
  const [imgRootDev] = g.devIno(IMAGE, '.');
  const [workDev, workIno] = g.devIno(WORK, 'include');
  assert.equal(imgDev, 16n);
  assert.equal(imgRootDev, 16n);
  assert.notEqual(workDev, imgDev);
  assert.ok(workDev !== imgDev || workIno !== imgIno, 'no (dev, ino) aliasing');
  const fd = g.open(IMAGE, "include/stdio.h", 0, RIGHT.READ | RIGHT.FILESTAT_GET) as number;
  assert.equal(g.w.fd_filestat_get!(fd, OUT), 0);
  assert.equal(g.memory.view().getBigUint64(OUT, true), 16n);
});
