/**
 * Bundles (`.mbundle`): one zip any tool can open holding a named VFS's three volumes, an
 * optional HTML page and a signed manifest; and restoring one into a new VFS, exactly.
 *
 * Owns: the layout — `manifest.json` (`{ manifest, signature }`, Ed25519 over the manifest's
 * canonical JSON), `vfs/VOLUME/PATH` for each file's bytes, `index.html` for the page — and the
 * manifest `{ v: 1, type, name, html, entries, signer, time }` where every inode of every volume
 * is an entry `{ volume, path, kind, mode, mtimeNs }` (+ `bytes`, `sha256` for files, `target`
 * for symlinks; the volume roots are entries with path `/`). Restore order: the zip's central
 * directory is checked (zip-check.ts), the manifest's signature verified (and its signer held to
 * `trust`), every entry extracted and matched to the manifest (size and sha256, and the zip
 * holds nothing the manifest does not list) — all before the target VFS is opened. Only then is
 * it written: directories, files, symlinks, modes, then every mtime (directories last, deepest
 * first, so creating their children does not move them).
 *
 * Invariant: a bundle that fails any check writes nothing (every entry's directory and every
 * symlink target is checked up front too, so a restore does not stop half-way on one); a restore
 * never writes into a VFS
 * that already holds a file (no merge with what is there); paths only ever reach the VFS (never
 * the host filesystem), so a hostile path can at worst name a VFS path, and those are checked too.
 *
 * Does not protect against: hard links (each name is restored as its own file); atime and ctime
 * (not kept); a signer the restorer chose to trust that it should not have; the target VFS's
 * quota (a bundle larger than it stops with ENOSPC part-way through writing).
 */

import { zipSync, type Zippable } from 'fflate';
import { SandboxError } from '../errors.ts';
import { Vfs, O_CREAT, O_EXCL, VOLUMES, type VolumeName } from '../storage/vfs.ts';
import { checkSymlinkTarget } from '../storage/vfs-path.ts';
import { canonicalBytes } from './canonical.ts';
import { verifyForDid } from './did.ts';
import type { Identity } from './identity.ts';
import { sha256Hex, safeAssetPath } from './artifact.ts';
import { extractEntry, inspectZip } from './zip-check.ts';

export const BUNDLE_TYPE = 'membrane/bundle';
const MANIFEST = 'manifest.json';
const HTML = 'index.html';
const READ_SLICE = 16 * 1024 * 1024;

export interface BundleEntry {
  readonly volume: VolumeName;
  readonly path: string;
  readonly kind: 'file' | 'dir' | 'symlink';
  readonly mode: number;
  /** Nanoseconds since the epoch, as decimal text (JSON numbers cannot hold them exactly). */
  readonly mtimeNs: string;
  readonly bytes?: number;
  readonly sha256?: string;
  readonly target?: string;
}

export interface BundleManifest {
  readonly v: 1;
  readonly type: typeof BUNDLE_TYPE;
  readonly name: string;
  readonly html: { readonly bytes: number; readonly sha256: string } | null;
  readonly entries: readonly BundleEntry[];
  readonly signer: string;
  readonly time: string;
}

const zipName = (e: BundleEntry): string => `vfs/${e.volume}${e.path}`;

function readAll(vfs: Vfs, ino: number, size: number): Uint8Array {
  const out = new Uint8Array(size);
  for (let at = 0; at < size; ) {
    const chunk = vfs.read(ino, at, Math.min(READ_SLICE, size - at));
    if (chunk.length === 0) break;
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

/** Pack the named VFS (and an optional HTML page) into a signed bundle: the zip's bytes. */
export function createBundle(vfsName: string, signer: Identity, opts: { html?: Uint8Array; time?: Date } = {}): Uint8Array {
  const vfs = Vfs.open({ name: vfsName });
  const entries: BundleEntry[] = [];
  const files: Zippable = {};
  try {
    for (const volume of VOLUMES) {
      const walk = (ino: number, path: string): void => {
        const st = vfs.statIno(ino);
        const base = { volume, path, mode: st.mode, mtimeNs: st.mtimeNs.toString() };
        if (st.kind === 'dir') {
          entries.push({ ...base, kind: 'dir' });
          for (let cookie = 0; ; ) {
            const batch = vfs.readdir(ino, cookie, 1024);
            if (batch.length === 0) break;
            for (const d of batch) walk(d.ino, path === '/' ? `/${d.name}` : `${path}/${d.name}`);
            cookie = batch[batch.length - 1]!.next;
          }
        } else if (st.kind === 'symlink') {
          entries.push({ ...base, kind: 'symlink', target: vfs.readlink(volume, path) });
        } else {
          const data = readAll(vfs, ino, st.size);
          const entry: BundleEntry = { ...base, kind: 'file', bytes: data.length, sha256: sha256Hex(data) };
          entries.push(entry);
          files[zipName(entry)] = [data, { level: 6 }];
        }
      };
      walk(vfs.rootIno(volume), '/');
    }
  } finally {
    vfs.close();
  }
  const manifest: BundleManifest = {
    v: 1,
    type: BUNDLE_TYPE,
    name: vfsName,
    html: opts.html ? { bytes: opts.html.length, sha256: sha256Hex(opts.html) } : null,
    entries,
    signer: signer.did,
    time: (opts.time ?? new Date()).toISOString(),
  };
  if (opts.html) files[HTML] = [opts.html, { level: 6 }];
  files[MANIFEST] = new TextEncoder().encode(`${JSON.stringify({ manifest, signature: signer.keys.sign(canonicalBytes(manifest)) })}\n`);
  return zipSync(files);
}

const refuse = (why: string): SandboxError => new SandboxError('POLICY_INVALID', `refusing the bundle: ${why}`);
const KINDS = ['file', 'dir', 'symlink'];

function checkEntry(e: unknown): BundleEntry {
  const x = e as Record<string, unknown> | null;
  if (x === null || typeof x !== 'object') throw refuse('a manifest entry is not an object');
  if (!(VOLUMES as readonly unknown[]).includes(x['volume']) || !KINDS.includes(x['kind'] as string)) throw refuse('a manifest entry names no volume or kind');
  const path = x['path'];
  if (typeof path !== 'string' || (path !== '/' && !(path.startsWith('/') && safeAssetPath(path.slice(1))))) throw refuse(`manifest path ${JSON.stringify(path).slice(0, 80)} is not a safe absolute VFS path`);
  if (typeof x['mode'] !== 'number' || !Number.isInteger(x['mode']) || x['mode'] < 0 || x['mode'] > 0o7777) throw refuse(`${path}: bad mode`);
  if (typeof x['mtimeNs'] !== 'string' || !/^\d{1,20}$/.test(x['mtimeNs'])) throw refuse(`${path}: bad mtime`);
  if (x['kind'] === 'file' && (typeof x['bytes'] !== 'number' || typeof x['sha256'] !== 'string')) throw refuse(`${path}: a file entry has bytes and sha256`);
  if (x['kind'] === 'symlink') {
    if (typeof x['target'] !== 'string') throw refuse(`${path}: a symlink entry has a target`);
    try {
      checkSymlinkTarget(x['target']);
    } catch {
      throw refuse(`${path}: the symlink target is not one the VFS accepts`);
    }
  }
  if (path === '/' && x['kind'] !== 'dir') throw refuse('a volume root is a directory');
  return x as unknown as BundleEntry;
}

export interface RestoreReport {
  readonly signer: string;
  readonly files: number;
  readonly dirs: number;
  readonly symlinks: number;
  /** The bundle's HTML page, if it carries one (verified like the files; not written to the VFS). */
  readonly html: Uint8Array | null;
}

/** Check everything about a bundle (see the header); the verified manifest and file contents. */
export function checkBundle(zip: Uint8Array, trust?: readonly string[]): { manifest: BundleManifest; contents: Map<string, Uint8Array>; html: Uint8Array | null } {
  const infos = inspectZip(zip);
  const byName = new Map(infos.map((i) => [i.name, i]));
  const mInfo = byName.get(MANIFEST);
  if (!mInfo) throw refuse('it has no manifest.json');
  if (mInfo.declaredBytes > 64 * 1024 * 1024) throw refuse('its manifest is over 64 MiB');
  let env: Record<string, unknown>;
  try {
    env = JSON.parse(new TextDecoder().decode(extractEntry(zip, mInfo))) as Record<string, unknown>;
  } catch (e) {
    if (e instanceof SandboxError) throw e;
    throw refuse('its manifest is not JSON');
  }
  const m = env?.['manifest'] as Record<string, unknown> | undefined;
  if (!m || typeof m !== 'object' || m['v'] !== 1 || m['type'] !== BUNDLE_TYPE || typeof m['signer'] !== 'string' || typeof env['signature'] !== 'string' || !Array.isArray(m['entries'])) throw refuse(`its manifest is not a version-1 ${BUNDLE_TYPE}`);
  let signed: Uint8Array;
  try {
    signed = canonicalBytes(m);
  } catch {
    throw refuse('its manifest is not plain JSON');
  }
  if (!verifyForDid(m['signer'], signed, env['signature'])) throw refuse('the manifest\'s signature does not verify (tampered, or not signed by its signer)');
  if (trust && !trust.includes(m['signer'])) throw refuse(`it is signed by ${m['signer'].slice(0, 120)}, not one of the trusted DIDs`);
  const manifest = m as unknown as BundleManifest;
  const entries = manifest.entries.map(checkEntry);
  const expected = new Set<string>([MANIFEST]);
  const seen = new Set<string>();
  const contents = new Map<string, Uint8Array>();
  const dirs = new Set(entries.filter((e) => e.kind === 'dir').map((e) => `${e.volume}:${e.path}`));
  for (const e of entries) {
    const key = `${e.volume}:${e.path}`;
    if (seen.has(key)) throw refuse(`${e.volume}${e.path} is listed twice`);
    seen.add(key);
    // Every entry's directory is in the manifest too, so the restore cannot stop half-way on a missing parent.
    const parent = e.path === '/' ? null : e.path.slice(0, e.path.lastIndexOf('/')) || '/';
    if (parent !== null && !dirs.has(`${e.volume}:${parent}`)) throw refuse(`${e.volume}${e.path}: its directory ${parent} is not in the manifest`);
    if (e.kind !== 'file') continue;
    const name = zipName(e);
    expected.add(name);
    const info = byName.get(name);
    if (!info) throw refuse(`${name} is in the manifest but not in the zip`);
    if (info.declaredBytes !== e.bytes) throw refuse(`${name} declares ${info.declaredBytes} bytes, the signed manifest ${e.bytes}`);
    const data = extractEntry(zip, info);
    if (sha256Hex(data) !== e.sha256) throw refuse(`${name} differs from the signed manifest (its sha256)`);
    contents.set(key, data);
  }
  let html: Uint8Array | null = null;
  if (manifest.html) {
    const info = byName.get(HTML);
    if (!info) throw refuse('the manifest lists an HTML page the zip does not hold');
    html = extractEntry(zip, info);
    if (html.length !== manifest.html.bytes || sha256Hex(html) !== manifest.html.sha256) throw refuse('index.html differs from the signed manifest');
    expected.add(HTML);
  }
  for (const i of infos) if (!expected.has(i.name)) throw refuse(`entry ${JSON.stringify(i.name.slice(0, 80))} is not in the signed manifest`);
  return { manifest: { ...manifest, entries }, contents, html };
}

/** Restore a checked bundle into the named VFS, which must hold no files yet. */
export function restoreBundle(zip: Uint8Array, vfsName: string, opts: { trust?: readonly string[] } = {}): RestoreReport {
  const { manifest, contents, html } = checkBundle(zip, opts.trust);
  const vfs = Vfs.open({ name: vfsName });
  try {
    for (const v of VOLUMES) if (vfs.readdir(vfs.rootIno(v), 0, 1).length > 0) throw new SandboxError('POLICY_INVALID', `the VFS "${vfsName}" is not empty (its ${v} volume holds files): restore into a new one`);
    const depth = (p: string): number => (p === '/' ? 0 : p.split('/').length - 1);
    const ordered = [...manifest.entries].sort((a, b) => depth(a.path) - depth(b.path));
    const times: { ino: number; mtimeNs: bigint; depth: number; dir: boolean }[] = [];
    let files = 0, dirs = 0, symlinks = 0;
    for (const e of ordered) {
      let ino: number;
      if (e.kind === 'dir') {
        ino = e.path === '/' ? vfs.rootIno(e.volume) : vfs.mkdir(e.volume, e.path, e.mode).ino;
        vfs.setMode(ino, e.mode);
        dirs++;
      } else if (e.kind === 'symlink') {
        ino = vfs.symlink(e.target!, e.volume, e.path).ino;
        symlinks++;
      } else {
        ino = vfs.open(e.volume, e.path, O_CREAT | O_EXCL, { mode: e.mode }).ino;
        const data = contents.get(`${e.volume}:${e.path}`)!;
        if (data.length > 0) vfs.write(ino, 0, data);
        vfs.setMode(ino, e.mode);
        files++;
      }
      times.push({ ino, mtimeNs: BigInt(e.mtimeNs), depth: depth(e.path), dir: e.kind === 'dir' });
    }
    // Files and links first, then directories deepest first: nothing set later moves an mtime set earlier.
    times.sort((a, b) => Number(a.dir) - Number(b.dir) || b.depth - a.depth);
    for (const t of times) vfs.setTimes(t.ino, undefined, t.mtimeNs);
    vfs.sync();
    return { signer: manifest.signer, files, dirs, symlinks, html };
  } finally {
    vfs.close();
  }
}
