/**
 * Image VFSes inside a worker thread: read-only databases (a toolchain's sysroot) opened once per
 * thread and shared by every guest this thread runs that mounts them.
 *
 * Owns: the per-thread table of open images and turning a spec's `images` into WASI preopens.
 * Invariant: an image is opened read-only by SQLite (Vfs.openImage) and its descriptors carry no
 * mutating rights (src/wasi/fs.ts), so no guest can change what another guest reads from it; each
 * image reports a device number of its own, so its inodes never alias the guest's files (clang
 * decides whether two headers are one file by device and inode).
 *
 * Does not protect against: a host process rewriting the image file while it is open (the cache
 * directory must be private to the engine's user, like `$MEMBRANE_HOME`).
 */

import { Vfs, type ImageMount } from '../../storage/index.ts';
import type { Preopen } from '../../wasi/index.ts';

const open = new Map<string, Vfs>();
/** Device numbers of images start here (the guest's three volumes are 1–3). */
const FIRST_IMAGE_DEV = 16n;

export function imagePreopens(images: readonly ImageMount[] | undefined): Preopen[] {
  if (!images) return [];
  return images.map((m, i) => {
    let vfs = open.get(m.file);
    if (!vfs) {
      vfs = Vfs.openImage(m.file);
      open.set(m.file, vfs);
    }
    return { guestPath: m.guestPath, volume: 'workspace', image: { vfs, dev: FIRST_IMAGE_DEV + BigInt(i) } };
  });
}
