/**
 * Signed artifacts: a manifest naming every asset of a module or a directory by its sha256,
 * signed by a tenant's Ed25519 key, and its check.
 *
 * Owns: the envelope `{ manifest, signature }` written beside the artifact (`FILE.manifest.json`
 * for a file, `DIR/membrane.manifest.json` for a directory), where `manifest` is
 * `{ v: 1, type, name, version, caps, assets: [{ path, sha256, bytes }], signer, time }` and
 * `signature` is Ed25519 (base64url) over its canonical JSON (canonical.ts). `caps` are the cap
 * words the wasm assets' imports need (the policy catalog) plus any declared by the signer.
 * The check reports `{ signature, assetIntegrity, valid }`: the signature half needs the
 * signer's DID (a did:key carries its key; a did:web needs its document), the asset half needs
 * no key at all — only the files.
 *
 * Invariant: an envelope is untrusted input — bounded in size and entry count, exact types —
 * and an asset path is relative, `/`-separated, with no empty, `.` or `..` segment; an asset is
 * read only if it is a regular file (never through a symbolic link) inside the manifest's
 * directory. `valid` is true only when both halves hold.
 *
 * Does not protect against: a signer's key being stolen; files in a directory that the manifest
 * does not list (they are not part of the artifact and are not checked); a DID the verifier
 * chose to trust that it should not have.
 */

import { componentImports, isComponent } from '../wasm/component.ts';
import { componentCaps } from '../policy/component-world.ts';
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readFileSync, readSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { SandboxError } from '../errors.ts';
import { lookupImport } from '../policy/catalog.ts';
import { CAP_WORDS, isCapWord, type CapWord } from '../policy/profiles.ts';
import { describeModule } from '../wasm/inspect.ts';
import { canonicalBytes } from './canonical.ts';
import { didWebId, verifyForDid } from './did.ts';
import type { Identity } from './identity.ts';

export const ARTIFACT_TYPE = 'membrane/artifact';
export const DIR_MANIFEST = 'membrane.manifest.json';
/** An envelope larger than this is not one. */
export const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
/** An artifact lists at most this many assets. */
export const MAX_ASSETS = 10_000;
/** Deepest directory walked when signing a directory. */
const MAX_DIR_DEPTH = 32;
const SHA256 = /^[0-9a-f]{64}$/;
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export interface Asset {
  readonly path: string;
  readonly sha256: string;
  readonly bytes: number;
}

export interface ArtifactManifest {
  readonly v: 1;
  readonly type: typeof ARTIFACT_TYPE;
  readonly name: string;
  readonly version: string;
  readonly caps: readonly CapWord[];
  readonly assets: readonly Asset[];
  readonly signer: string;
  readonly time: string;
}

export interface SignedArtifact {
  readonly manifest: ArtifactManifest;
  readonly signature: string;
}

export interface ArtifactCheck {
  readonly signature: boolean;
  readonly assetIntegrity: boolean;
  readonly valid: boolean;
  readonly signer: string | null;
  /** Why a half failed, one line each (empty when valid). */
  readonly reasons: readonly string[];
}

/** Why a module a guest names by VFS path is refused under `requireSigned`: it comes with no manifest. */
export const UNSIGNED_VFS_MODULE = 'a module read from the VFS carries no signed manifest, and the engine runs only signed modules';

export function sha256Hex(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The cap words a module's imports need (catalog grants, not ambient ones), sorted. */
export function capsOfModule(bytes: Uint8Array): CapWord[] {
  if (isComponent(bytes)) {
    const of = new Set(componentCaps(componentImports(bytes)));
    return CAP_WORDS.filter((c) => of.has(c));
  }
  const caps = new Set<CapWord>();
  for (const imp of describeModule(bytes).imports) {
    const grant = lookupImport(imp.module, imp.name)?.grant;
    if (grant !== undefined && grant !== 'ambient' && grant !== 'never') caps.add(grant);
  }
  return CAP_WORDS.filter((c) => caps.has(c));
}

/** Is `path` a safe relative asset path (no empty, `.` or `..` segment, no `\`, NUL or leading `/`)? */
export function safeAssetPath(path: unknown): path is string {
  if (typeof path !== 'string' || path.length === 0 || path.length > 4096 || /[\\\0]/.test(path)) return false;
  return path.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..');
}

function walk(root: string, rel: string, depth: number, out: string[]): void {
  if (depth > MAX_DIR_DEPTH) throw new SandboxError('POLICY_INVALID', `the directory nests deeper than ${MAX_DIR_DEPTH}`);
  for (const entry of readdirSync(join(root, rel), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const path = rel === '' ? entry.name : `${rel}/${entry.name}`;
    if (path === DIR_MANIFEST) continue;
    if (entry.isSymbolicLink()) throw new SandboxError('POLICY_INVALID', `${path} is a symbolic link: an artifact holds regular files only`);
    if (entry.isDirectory()) walk(root, path, depth + 1, out);
    else if (entry.isFile()) out.push(path);
    else throw new SandboxError('POLICY_INVALID', `${path} is not a regular file`);
    if (out.length > MAX_ASSETS) throw new SandboxError('POLICY_INVALID', `an artifact holds at most ${MAX_ASSETS} files`);
  }
}

export interface SignOptions {
  readonly name?: string;
  readonly version?: string;
  /** Cap words the signer declares beyond what the wasm imports need. */
  readonly caps?: readonly string[];
  readonly time?: Date;
  /** Name the signer as `did:web:HOST` (the same key, published by `identity did-web`) instead of its did:key. */
  readonly didWebHost?: string;
}

/** Sign a `.wasm` file or a directory: writes the envelope beside it; returns its path and content. */
export function signArtifact(target: string, signer: Identity, opts: SignOptions = {}): { file: string; signed: SignedArtifact } {
  const st = lstatSync(target);
  const isDir = st.isDirectory();
  if (!isDir && !st.isFile()) throw new SandboxError('POLICY_INVALID', 'sign a regular file or a directory');
  const root = isDir ? target : dirname(target);
  const paths: string[] = [];
  if (isDir) walk(target, '', 0, paths);
  else paths.push(basename(target));
  const caps = new Set<CapWord>();
  for (const c of opts.caps ?? []) {
    if (!isCapWord(c)) throw new SandboxError('POLICY_INVALID', `unknown cap word "${String(c).slice(0, 32)}" (known: ${CAP_WORDS.join(', ')})`);
    caps.add(c);
  }
  const assets = paths.map((p): Asset => {
    const data = readFileSync(join(root, p));
    if (p.endsWith('.wasm')) for (const c of capsOfModule(data)) caps.add(c);
    return { path: p, sha256: sha256Hex(data), bytes: data.length };
  });
  const manifest: ArtifactManifest = {
    v: 1,
    type: ARTIFACT_TYPE,
    name: opts.name ?? basename(target).replace(/\.wasm$/, ''),
    version: opts.version ?? '0.0.0',
    caps: CAP_WORDS.filter((c) => caps.has(c)),
    assets,
    signer: opts.didWebHost !== undefined ? didWebId(opts.didWebHost) : signer.did,
    time: (opts.time ?? new Date()).toISOString(),
  };
  const signed: SignedArtifact = { manifest, signature: signer.keys.sign(canonicalBytes(manifest)) };
  const file = isDir ? join(target, DIR_MANIFEST) : `${target}.manifest.json`;
  writeFileSync(file, `${JSON.stringify(signed, null, 2)}\n`);
  return { file, signed };
}

/** The envelope, its fields' types checked (not its signature), or the reason it is not one. */
export function parseSignedArtifact(value: unknown): SignedArtifact | string {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'the manifest file is not a JSON object';
  const env = value as Record<string, unknown>;
  if (typeof env['signature'] !== 'string') return 'the manifest has no signature';
  const m = env['manifest'] as Record<string, unknown> | null;
  if (m === null || typeof m !== 'object' || Array.isArray(m)) return 'the file holds no manifest object';
  if (m['v'] !== 1 || m['type'] !== ARTIFACT_TYPE) return `not a version-1 ${ARTIFACT_TYPE} manifest`;
  for (const k of ['name', 'version', 'signer', 'time'] as const) if (typeof m[k] !== 'string' || (m[k] as string).length > 1024) return `the manifest's ${k} is not a short string`;
  if (!TIME.test(m['time'] as string)) return 'the manifest\'s time is not an ISO-8601 UTC time';
  if (!Array.isArray(m['caps']) || !m['caps'].every(isCapWord)) return 'the manifest\'s caps are not all cap words';
  if (!Array.isArray(m['assets']) || m['assets'].length === 0 || m['assets'].length > MAX_ASSETS) return `the manifest lists 1..${MAX_ASSETS} assets`;
  const seen = new Set<string>();
  for (const a of m['assets'] as unknown[]) {
    const asset = a as Record<string, unknown> | null;
    if (asset === null || typeof asset !== 'object') return 'an asset is not an object';
    if (!safeAssetPath(asset['path'])) return `asset path ${JSON.stringify(asset['path']).slice(0, 80)} is not a safe relative path`;
    if (seen.has(asset['path'])) return `asset ${asset['path']} is listed twice`;
    seen.add(asset['path']);
    if (typeof asset['sha256'] !== 'string' || !SHA256.test(asset['sha256'])) return `asset ${asset['path']} has no sha256`;
    if (typeof asset['bytes'] !== 'number' || !Number.isSafeInteger(asset['bytes']) || asset['bytes'] < 0) return `asset ${asset['path']} has no size`;
  }
  return value as SignedArtifact;
}

/** Read an envelope file (bounded; a FIFO or a link is not one). */
export function readSignedArtifact(file: string): unknown {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (err) {
    throw new SandboxError('POLICY_INVALID', `cannot read the manifest ${basename(file)} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    if (!fstatSync(fd).isFile()) throw new SandboxError('POLICY_INVALID', 'the manifest is not a regular file');
    const buf = Buffer.alloc(MAX_MANIFEST_BYTES + 1);
    const n = readSync(fd, buf, 0, buf.length, 0);
    if (n > MAX_MANIFEST_BYTES) throw new SandboxError('POLICY_INVALID', `a manifest is at most ${MAX_MANIFEST_BYTES} bytes`);
    return JSON.parse(buf.subarray(0, n).toString('utf8')) as unknown;
  } catch (err) {
    if (err instanceof SandboxError) throw err;
    throw new SandboxError('POLICY_INVALID', 'the manifest is not JSON');
  } finally {
    closeSync(fd);
  }
}

/** Does the signature hold for the named signer (and is the signer one of `trust`, if given)? */
export function signatureHolds(signed: SignedArtifact, documents?: ReadonlyMap<string, unknown>): boolean {
  let bytes: Buffer;
  try {
    bytes = canonicalBytes(signed.manifest);
  } catch {
    return false; // not plain JSON (nested too deep): nothing was signed over it
  }
  return verifyForDid(signed.manifest.signer, bytes, signed.signature, documents);
}

function checkAsset(root: string, asset: Asset): string | null {
  const path = join(root, ...asset.path.split('/'));
  let fd: number;
  try {
    // Every directory on the way must be a real one, not a link planted to leave the root.
    let at = root;
    for (const seg of asset.path.split('/').slice(0, -1)) {
      at = join(at, seg);
      if (!lstatSync(at).isDirectory()) return `${asset.path}: ${seg} is not a directory`;
    }
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return `${asset.path}: ${code === 'ENOENT' ? 'missing' : code === 'ELOOP' ? 'a symbolic link' : `unreadable (${code ?? 'error'})`}`;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return `${asset.path}: not a regular file`;
    if (st.size !== asset.bytes) return `${asset.path}: ${st.size} bytes, the manifest says ${asset.bytes}`;
    const hash = createHash('sha256');
    const buf = Buffer.alloc(1 << 16);
    for (let n; (n = readSync(fd, buf, 0, buf.length, null)) > 0; ) hash.update(buf.subarray(0, n));
    return hash.digest('hex') === asset.sha256 ? null : `${asset.path}: sha256 differs from the manifest's`;
  } finally {
    closeSync(fd);
  }
}

export interface VerifyArtifactOptions {
  /** DID documents for did:web signers, keyed by DID (never fetched). */
  readonly documents?: ReadonlyMap<string, unknown>;
  /** When given, the signer must be one of these DIDs. */
  readonly trust?: readonly string[];
}

/** Check a manifest file: its signature, and every asset it lists beside it. */
export function verifyArtifact(file: string, opts: VerifyArtifactOptions = {}): ArtifactCheck {
  const parsed = parseSignedArtifact(readSignedArtifact(file));
  if (typeof parsed === 'string') return { signature: false, assetIntegrity: false, valid: false, signer: null, reasons: [parsed] };
  const reasons: string[] = [];
  let signature = signatureHolds(parsed, opts.documents);
  if (!signature) reasons.push(`the signature does not verify for ${parsed.manifest.signer.slice(0, 120)}`);
  if (signature && opts.trust && !opts.trust.includes(parsed.manifest.signer)) {
    signature = false;
    reasons.push(`the signer ${parsed.manifest.signer} is not one of the trusted DIDs`);
  }
  const root = dirname(file);
  const bad = parsed.manifest.assets.map((a) => checkAsset(root, a)).filter((r): r is string => r !== null);
  reasons.push(...bad.slice(0, 20));
  if (bad.length > 20) reasons.push(`…and ${bad.length - 20} more assets`);
  const assetIntegrity = bad.length === 0;
  return { signature, assetIntegrity, valid: signature && assetIntegrity, signer: parsed.manifest.signer, reasons };
}

/**
 * Why `bytes` may not run under `requireSigned` (null when it may): the envelope must be well
 * formed, signed by a DID in `trusted` (a did:web verifies only against its document in
 * `documents`), and list an asset whose sha256 is the module's.
 */
export function signedModuleRefusal(bytes: Uint8Array, artifact: unknown, trusted: readonly string[], documents?: ReadonlyMap<string, unknown>): string | null {
  if (artifact === undefined || artifact === null) return 'the module is unsigned (no artifact manifest given) and this engine runs only signed modules';
  const parsed = parseSignedArtifact(artifact);
  if (typeof parsed === 'string') return `the artifact manifest is malformed: ${parsed}`;
  if (!trusted.includes(parsed.manifest.signer)) return `the module is signed by ${parsed.manifest.signer.slice(0, 120)}, which is not one of the engine's requireSigned DIDs`;
  if (!signatureHolds(parsed, documents)) {
    return parsed.manifest.signer.startsWith('did:web:')
      ? `the artifact manifest's signature does not verify under ${parsed.manifest.signer.slice(0, 120)}'s DID document (edited, forged, or signed by a key the document does not list)`
      : 'the artifact manifest\'s signature does not verify (edited or forged)';
  }
  const hash = sha256Hex(bytes);
  if (!parsed.manifest.assets.some((a) => a.sha256 === hash)) return 'the module\'s sha256 is not among the signed manifest\'s assets (altered, or another module)';
  return null;
}
