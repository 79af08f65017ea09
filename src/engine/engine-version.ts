/**
 * The engine's version as receipts state it: `package.json`'s `version`, read once.
 * Invariant: never throws — an unreadable package file is version "unknown".
 * Does not protect against: a package.json edited in place (the version is a label, not a proof).
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../storage/package-root.ts';

let cachedVersion: string | null = null;

export function engineVersion(): string {
  try {
    return (cachedVersion ??= String((JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version?: unknown }).version ?? 'unknown'));
  } catch {
    return 'unknown';
  }
}
