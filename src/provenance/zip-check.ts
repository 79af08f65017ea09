/**
 * The pre-flight check of an untrusted zip (a `.mbundle`) before a byte of it is inflated: its
 * central directory read by hand, bounded, and held to the limits below.
 *
 * Owns: `inspectZip` — every entry's name, method, declared and compressed sizes and whether it
 * is a symbolic link, read from the central directory; and the refusals: more than
 * `MAX_BUNDLE_ENTRIES` entries (a directory of a million empty files); an entry name that is
 * absolute, holds `\`, NUL, an empty, `.` or `..` segment (zip-slip), or repeats; a symbolic
 * link entry (Unix mode S_IFLNK in the external attributes); encryption, ZIP64 or a method other
 * than stored/deflate; declared sizes summing past `MAX_BUNDLE_INFLATED_BYTES`; an entry whose
 * declared size is over `MAX_INFLATE_RATIO` times its compressed size (for entries over
 * `RATIO_FLOOR_BYTES`: tiny files legitimately compress further); a central directory that runs
 * past the file.
 *
 * Invariant: `inspectZip` inflates nothing and allocates nothing by a declared size;
 * `extractEntry` gives the inflater (fflate) an output buffer of the declared size plus one byte,
 * so an entry that inflates to more than it declared is caught (and memory never grows past the
 * declared total), and one that inflates to less is caught too.
 *
 * Does not protect against: a zip that is well formed and within limits but whose content is
 * wrong — the signed manifest's hashes (bundle.ts) catch that.
 */

import { inflateSync } from 'fflate';
import { SandboxError } from '../errors.ts';
import { safeAssetPath } from './artifact.ts';

/** Entries a bundle may hold. */
export const MAX_BUNDLE_ENTRIES = 50_000;
/** Sum of declared (inflated) sizes. */
export const MAX_BUNDLE_INFLATED_BYTES = 1024 * 1024 * 1024;
/** Largest bundle file read. */
export const MAX_BUNDLE_FILE_BYTES = 1024 * 1024 * 1024;
/** Declared/compressed ratio allowed for entries larger than RATIO_FLOOR_BYTES. */
export const MAX_INFLATE_RATIO = 200;
export const RATIO_FLOOR_BYTES = 1024 * 1024;

export interface ZipEntryInfo {
  readonly name: string;
  readonly method: number;
  readonly compressedBytes: number;
  readonly declaredBytes: number;
  /** Where its local header starts. */
  readonly localOffset: number;
}

const refuse = (why: string): SandboxError => new SandboxError('POLICY_INVALID', `refusing the bundle: ${why}`);
const u16 = (b: Uint8Array, o: number): number => b[o]! | (b[o + 1]! << 8);
const u32 = (b: Uint8Array, o: number): number => (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;

/** The central directory's entries, every limit checked (POLICY_INVALID naming the first broken one). */
export function inspectZip(zip: Uint8Array): ZipEntryInfo[] {
  let e = zip.length - 22;
  const stop = Math.max(0, zip.length - 22 - 65_535);
  while (e >= stop && u32(zip, e) !== 0x06054b50) e--;
  if (e < stop || e < 0) throw refuse('it is not a zip file (no end of central directory)');
  const count = u16(zip, e + 10);
  const cdSize = u32(zip, e + 12);
  const cdOffset = u32(zip, e + 16);
  if (count === 0xffff || cdOffset === 0xffffffff || cdSize === 0xffffffff) throw refuse('ZIP64 archives are not accepted');
  if (count > MAX_BUNDLE_ENTRIES) throw refuse(`it has ${count} entries (at most ${MAX_BUNDLE_ENTRIES})`);
  if (cdOffset + cdSize > e) throw refuse('its central directory runs past the end of the file');
  const out: ZipEntryInfo[] = [];
  const seen = new Set<string>();
  let total = 0;
  let o = cdOffset;
  for (let i = 0; i < count; i++) {
    if (o + 46 > e || u32(zip, o) !== 0x02014b50) throw refuse('its central directory is malformed');
    const host = zip[o + 5]!;
    const flags = u16(zip, o + 8);
    const method = u16(zip, o + 10);
    const compressedBytes = u32(zip, o + 20);
    const declaredBytes = u32(zip, o + 24);
    const nameLen = u16(zip, o + 28);
    const next = o + 46 + nameLen + u16(zip, o + 30) + u16(zip, o + 32);
    if (next > e) throw refuse('its central directory is malformed');
    const raw = zip.subarray(o + 46, o + 46 + nameLen);
    const name = flags & 0x800 ? new TextDecoder('utf-8', { fatal: false }).decode(raw) : Buffer.from(raw).toString('latin1');
    const shown = JSON.stringify(name.slice(0, 80));
    if (!safeAssetPath(name)) throw refuse(`entry ${shown} is not a safe relative path (zip-slip)`);
    if (seen.has(name)) throw refuse(`entry ${shown} appears twice`);
    seen.add(name);
    const unixType = (u32(zip, o + 38) >>> 16) & 0o170000;
    if (host === 3 && unixType === 0o120000) throw refuse(`entry ${shown} is a symbolic link`);
    if (flags & 0x1) throw refuse(`entry ${shown} is encrypted`);
    if (method !== 0 && method !== 8) throw refuse(`entry ${shown} uses compression method ${method} (stored or deflate only)`);
    if (method === 0 && compressedBytes !== declaredBytes) throw refuse(`stored entry ${shown} declares ${declaredBytes} bytes but holds ${compressedBytes}`);
    if (declaredBytes > RATIO_FLOOR_BYTES && declaredBytes > MAX_INFLATE_RATIO * Math.max(1, compressedBytes)) {
      throw refuse(`entry ${shown} would inflate ${declaredBytes} bytes from ${compressedBytes} (over ${MAX_INFLATE_RATIO}:1: a zip bomb?)`);
    }
    total += declaredBytes;
    if (total > MAX_BUNDLE_INFLATED_BYTES) throw refuse(`its entries declare more than ${MAX_BUNDLE_INFLATED_BYTES} bytes in all`);
    out.push({ name, method, compressedBytes, declaredBytes, localOffset: u32(zip, o + 42) });
    o = next;
  }
  return out;
}

/** One entry's bytes, exactly its declared size (POLICY_INVALID if the data says otherwise). */
export function extractEntry(zip: Uint8Array, entry: ZipEntryInfo): Uint8Array {
  const lo = entry.localOffset;
  if (lo + 30 > zip.length || u32(zip, lo) !== 0x04034b50) throw refuse(`entry ${JSON.stringify(entry.name.slice(0, 80))} has no local header`);
  const start = lo + 30 + u16(zip, lo + 26) + u16(zip, lo + 28);
  const end = start + entry.compressedBytes;
  if (end > zip.length) throw refuse(`entry ${JSON.stringify(entry.name.slice(0, 80))} runs past the end of the file`);
  const data = zip.subarray(start, end);
  let out: Uint8Array;
  try {
    out = entry.method === 0 ? data.slice() : inflateSync(data, { out: new Uint8Array(entry.declaredBytes + 1) });
  } catch {
    throw refuse(`entry ${JSON.stringify(entry.name.slice(0, 80))} does not inflate (corrupt)`);
  }
  if (out.length !== entry.declaredBytes) {
    throw refuse(`entry ${JSON.stringify(entry.name.slice(0, 80))} declares ${entry.declaredBytes} bytes but inflates to ${out.length > entry.declaredBytes ? 'more' : out.length}`);
  }
  return out;
}
