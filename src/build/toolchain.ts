/**
 * The in-sandbox C/C++ toolchain: LLVM (clang, clang++, wasm-ld, llvm-ar) as one wasm32-wasip1
 * module from `@yowasp/clang`, and its WASI sysroot as a read-only image VFS.
 *
 * Owns: finding the package (an optional dependency: without it the build lane reports
 * NOT_CAPABLE saying how to install it), reading the module's bytes once per process, and building
 * the sysroot image once per machine — the package's resource tarball (headers, libc, libc++,
 * compiler-rt, crt1) written into an SQLite VFS under the cache directory, then only ever opened
 * read-only (engine/worker/images.ts). A build never copies the sysroot: every guest that runs a
 * toolchain command mounts the one image at SYSROOT_PATH.
 *
 * Invariant: the image is complete or absent — it is built under a temporary name and renamed into
 * place; a name carries the package version and the tarball's size, so a new package never reuses
 * an old image. The module is the package's file, unmodified here; the engine rewrites and meters
 * it like any guest.
 *
 * Does not protect against: a local user replacing the package files or the cache directory (they
 * are trusted like the rest of node_modules and `$MEMBRANE_HOME`); the ~1 s the first image build
 * blocks this thread for, once per machine and version.
 */

import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { SandboxError } from '../errors.ts';
import { ensurePrivateDirs } from '../storage/home-files.ts';
import { O_CREAT, Vfs, membraneCacheDir, openDatabase, type ImageMount } from '../storage/index.ts';
import { readTar } from './tar.ts';

/** Where every toolchain command sees the sysroot (also clang's resource directory). */
export const SYSROOT_PATH = '/sysroot';
/** The LLVM tools the registry offers, each the same module told apart by argv[0]. */
export const TOOL_NAMES = ['clang', 'clang++', 'wasm-ld', 'llvm-ar'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

const PACKAGE = '@yowasp/clang';
/** The image of a sysroot this large never holds more (headers and libraries, ~28 MB today). */
const IMAGE_MAX_BYTES = 1024 * 1024 * 1024;
const IMAGE_MAX_INODES = 200_000;

export interface Toolchain {
  readonly version: string;
  /** The LLVM module's bytes (read on first use, then kept). */
  module(): Uint8Array;
  /** The module's bytes if already read (no I/O). */
  loaded(): Uint8Array | null;
  /** The sysroot image (built on first use on this machine). */
  sysroot(): ImageMount;
}

let located: { gen: string; version: string } | null | undefined;

function locate(): { gen: string; version: string } | null {
  if (located !== undefined) return located;
  try {
    const entry = createRequire(import.meta.url).resolve(PACKAGE);
    const gen = dirname(entry);
    const version = (JSON.parse(readFileSync(join(gen, '..', 'package.json'), 'utf8')) as { version?: unknown }).version;
    located = typeof version === 'string' && existsSync(join(gen, 'llvm.core.wasm')) && existsSync(join(gen, 'llvm-resources.tar')) ? { gen, version } : null;
  } catch {
    located = null;
  }
  return located;
}

/** The module's bytes: one buffer per process, whatever the cache directory. */
let bytes: Uint8Array | null = null;
/** Cache directory → its toolchain (the sysroot image lives in the cache directory). */
const byCacheDir = new Map<string, Toolchain>();

/** The toolchain, or null when `@yowasp/clang` is not installed. */
export function findToolchain(cacheDir: string | null): Toolchain | null {
  const where = locate();
  if (!where) return null;
  const dir = cacheDir ?? membraneCacheDir();
  let found = byCacheDir.get(dir);
  if (found) return found;
  let image: ImageMount | null = null;
  found = {
    version: where.version,
    module: () => (bytes ??= new Uint8Array(readFileSync(join(where.gen, 'llvm.core.wasm')))),
    loaded: () => bytes,
    sysroot: () => (image ??= { file: sysrootImage(where.gen, where.version, dir), guestPath: SYSROOT_PATH }),
  };
  byCacheDir.set(dir, found);
  return found;
}

/** The toolchain, or NOT_CAPABLE saying how to get it. */
export function requireToolchain(cacheDir: string | null): Toolchain {
  const t = findToolchain(cacheDir);
  if (!t) throw new SandboxError('NOT_CAPABLE', `the build lane needs the optional package ${PACKAGE} (npm install ${PACKAGE})`, { package: PACKAGE });
  return t;
}

/** The image file for this package version, built now when absent. */
function sysrootImage(gen: string, version: string, cacheDir: string): string {
  const tar = join(gen, 'llvm-resources.tar');
  const dir = join(cacheDir, 'toolchains');
  const file = join(dir, `clang-${version.replace(/[^A-Za-z0-9.-]/g, '_')}-${statSync(tar).size}.sqlite`);
  if (existsSync(file)) return file;
  // Every directory on the way (a fresh $MEMBRANE_HOME has none of them yet), none a link.
  ensurePrivateDirs(dir);
  const tmp = `${file}.${randomUUID()}.tmp`;
  try {
    writeImage(readFileSync(tar), tmp);
    renameSync(tmp, file);
  } finally {
    for (const f of [tmp, `${tmp}-wal`, `${tmp}-shm`]) rmSync(f, { force: true });
  }
  return file;
}

function writeImage(archive: Uint8Array, file: string): void {
  const vfs = Vfs.open({ file, maxBytes: IMAGE_MAX_BYTES, maxInodes: IMAGE_MAX_INODES, durability: 'process-crash' });
  try {
    for (const e of readTar(archive)) {
      if (e.kind === 'dir') {
        vfs.mkdir('workspace', e.path, 0o755);
        continue;
      }
      const st = vfs.open('workspace', e.path, O_CREAT, {});
      vfs.write(st.ino, 0, e.data);
    }
  } finally {
    vfs.close();
  }
  // Out of WAL mode, so a read-only open needs no -wal or -shm beside it.
  const db = openDatabase(file);
  try {
    db.pragma('journal_mode = DELETE');
  } finally {
    db.close();
  }
}
