/**
 * Redirections between the in-sandbox shell and the script's VFS: `< FILE`, `> FILE`, `>> FILE`.
 *
 * Owns: mapping a shell path onto a VFS volume (`/tmp/...` and `/memory/...` are those volumes,
 * everything else the workspace) and whole-file reads and writes. Invariant: only the script's
 * own VFS is touched, never the host filesystem; a read is refused before it allocates when the
 * file is larger than MAX_REDIRECT_INPUT_BYTES.
 *
 * Does not protect against: disk use (the VFS quota bounds it) or path rules (the VFS enforces them).
 */

import { O_CREAT, O_TRUNC, VfsError, type Vfs, type VolumeName } from '../storage/index.ts';
import { MAX_REDIRECT_INPUT_BYTES } from './limits.ts';

function locate(path: string): { volume: VolumeName; path: string } {
  for (const volume of ['tmp', 'memory'] as const) {
    if (path === `/${volume}` || path.startsWith(`/${volume}/`)) return { volume, path: path.slice(volume.length + 1) || '/' };
  }
  return { volume: 'workspace', path };
}

/** The file's bytes, or a short reason (a VFS error code, or `EFBIG`) it cannot be read. */
export function readVfs(vfs: Vfs, path: string, max = MAX_REDIRECT_INPUT_BYTES): Uint8Array | string {
  try {
    const at = locate(path);
    const st = vfs.open(at.volume, at.path, 0);
    if (st.kind !== 'file') return 'EISDIR';
    if (st.size > max) return `EFBIG (larger than ${max} bytes)`;
    return vfs.read(st.ino, 0, st.size);
  } catch (e) {
    return e instanceof VfsError ? e.code : 'cannot read';
  }
}

/** null when written, else a short reason. */
export function writeVfs(vfs: Vfs, path: string, data: Uint8Array, append: boolean): string | null {
  try {
    const at = locate(path);
    const st = vfs.open(at.volume, at.path, append ? O_CREAT : O_CREAT | O_TRUNC);
    vfs.write(st.ino, append ? st.size : 0, data);
    return null;
  } catch (e) {
    return e instanceof VfsError ? e.code : 'cannot write';
  }
}

/** Remove a file if it is there (a temporary the script's tools left); never fails. */
export function removeVfs(vfs: Vfs, path: string): void {
  try {
    const at = locate(path);
    vfs.unlink(at.volume, at.path);
  } catch {
    // gone already, or never made
  }
}
