// Temp dirs for tests. Owns: every directory a test file makes under os.tmpdir() through
// tempDir(), and its removal. Invariant: each one is removed (recursively) when the test process
// exits, whether its tests passed or failed, so a run leaves nothing in the temp dir; a test that
// frees a large dir early may still rmSync it itself. Does not protect against a process that is
// killed (SIGKILL, a test runner's timeout): the test scripts run the suite with a TMPDIR of its
// own that they remove at the end (scripts/with-tmpdir.mjs), which catches those.
import { accessSync, constants, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

function removeAll(): void {
  for (const dir of made.splice(0)) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
    } catch {
      // Left for the run's own TMPDIR removal (e.g. a dir a test made unwritable as a non-root user).
    }
  }
}

/** A fresh directory `os.tmpdir()/PREFIX…`, removed when this process exits. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (made.length === 0) process.once('exit', removeAll);
  made.push(dir);
  return dir;
}

/**
 * Like tempDir, but in memory (/dev/shm) where the machine has one: for a test whose subject is
 * not the disk but which commits thousands of SQLite transactions (each an fsync at the default
 * durability, seconds to tens of seconds on a busy disk). Elsewhere it is tempDir. Not covered by
 * the run's TMPDIR removal: a process killed outright leaves it behind (it is small).
 */
export function memoryTempDir(prefix: string): string {
  try {
    if (statSync('/dev/shm').isDirectory()) {
      accessSync('/dev/shm', constants.W_OK);
      const dir = mkdtempSync(join('/dev/shm', prefix));
      if (made.length === 0) process.once('exit', removeAll);
      made.push(dir);
      return dir;
    }
  } catch {
    // no usable /dev/shm
  }
  return tempDir(prefix);
}
