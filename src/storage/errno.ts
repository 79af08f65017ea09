/**
 * WASI preview 1 errno values and `VfsError`, the one error the VFS throws.
 *
 * Owns: the table of errno names → numbers (the WASI `errno` enum, so the WASI layer hands the
 * number straight to the guest) and the error class carrying one of them.
 *
 * Invariant: every failure the VFS reports for a guest-supplied path or descriptor is a
 * `VfsError` whose `errno` is in `WASI_ERRNO`; anything else escaping the VFS is a bug
 * (a `SandboxError('INTERNAL')` or a raw SQLite error) and must be treated as such by callers.
 *
 * Does not protect against: a caller that shows `message` to a guest — messages may name the
 * guest path that failed (never a host path), which the guest already knows.
 */

export const WASI_ERRNO = Object.freeze({
  ESUCCESS: 0,
  EACCES: 2,
  EBADF: 8,
  EBUSY: 10,
  EDQUOT: 19,
  EEXIST: 20,
  EFBIG: 22,
  EINVAL: 28,
  EIO: 29,
  EISDIR: 31,
  ELOOP: 32,
  EMLINK: 34,
  ENAMETOOLONG: 37,
  ENOENT: 44,
  ENOSPC: 51,
  ENOSYS: 52,
  ENOTDIR: 54,
  ENOTEMPTY: 55,
  ENOTSUP: 58,
  EPERM: 63,
  EROFS: 69,
  EXDEV: 75,
  ENOTCAPABLE: 76,
} as const);

export type ErrnoName = keyof typeof WASI_ERRNO;

export class VfsError extends Error {
  /** The WASI errno number (see `WASI_ERRNO`). */
  readonly errno: number;
  /** The errno name, e.g. `ENOENT`. */
  readonly code: ErrnoName;

  constructor(code: ErrnoName, detail?: string) {
    super(detail === undefined ? code : `${code}: ${detail}`);
    this.name = 'VfsError';
    this.code = code;
    this.errno = WASI_ERRNO[code];
  }
}

/** Throw-expression helper: `x ?? fail('ENOENT', path)`. */
export function fail(code: ErrnoName, detail?: string): never {
  throw new VfsError(code, detail);
}
