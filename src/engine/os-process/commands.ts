/**
 * The `os_process` tier's command registry: a call granted a spawning cap (`commands`, `exec`,
 * `parallel`) runs its registered commands, exec'd commands, spawned processes and
 * `run_command_many` tasks inside its child, on the child engine's own worker threads — so the
 * child needs the parent engine's registry. The parent sends it with the request (a pooled child
 * was booted before the call, and a registration may have come since): each command by name and
 * sha256; a built-in (the package's own commands/bin file, which the child can read) by that
 * alone, the child reading the file and checking its hash; an operator's registered module by its
 * bytes (base64) — or, from 256 KiB on, by the path of its copy on the engine's shelf (a
 * directory of `<sha256>.wasm` files its children may read), the child checking the hash — with
 * its toolkit declaration.
 *
 * Owns: building that manifest (hashes cached per module buffer), the shelf (made with the
 * engine's first os_process call, removed with the engine or at the host's exit), and filling the child's registry
 * from it; the child's "operator module" test (`ChildRegistry.isRegisteredModule`): a registered
 * command's buffer, or the one module the parent admitted for this call.
 * Invariant: the child's commands are at most the parent's — exactly the names the parent resolves
 * (the toolchain's tools excepted: not sent, NOT_FOUND in the child), each with the bytes the
 * parent would run (a built-in whose file no longer hashes the same is left out) and the same
 * declaration. A call granted no spawning cap gets an empty registry.
 * Does not protect against: an operator registering a hostile module (it runs in the sandbox, as
 * on the instance tier); a host killed by a signal (its shelf stays in the temp dir); a local user
 * writing the shelf (a changed file no longer hashes the same: the child leaves the command out).
 */

import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CommandRegistry } from '../registry.ts';
import { packageRoot } from '../../storage/package-root.ts';
import { fromB64, toB64, type CommandEntry } from './protocol.ts';

export type { CommandEntry };

/** A registered module this big or bigger goes by content hash (a file of the shelf), not in every request. */
export const INLINE_MAX_BYTES = 256 * 1024;

/** Shelves not yet removed: a host that exits without closing its engine removes them on its way out. */
const shelves = new Set<string>();
let exitHook = false;

/**
 * The engine's directory of registered modules for its children, by content hash
 * (`<sha256>.wasm`, read-only, written once each): made with the engine's first os_process call,
 * readable by every child it starts (one of the plan's read dirs, so the pool key does not change),
 * removed with the engine.
 */
export class CommandShelf {
  readonly dir: string;
  private readonly placed = new Set<string>();

  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), 'membrane-oscmd-'));
    if (!exitHook) process.once('exit', () => shelves.forEach((d) => rmSync(d, { recursive: true, force: true })));
    exitHook = true;
    shelves.add(this.dir);
  }

  /** The path of `bytes` (hash `sha`) on the shelf, written now if it is not there yet. */
  place(sha: string, bytes: Uint8Array): string {
    const path = join(this.dir, `${sha}.wasm`);
    if (!this.placed.has(sha)) {
      const tmp = `${path}.${process.pid}.tmp`;
      writeFileSync(tmp, bytes, { mode: 0o400 });
      renameSync(tmp, path);
      chmodSync(path, 0o400);
      this.placed.add(sha);
    }
    return path;
  }

  close(): void {
    shelves.delete(this.dir);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The caps under which a guest runs commands: with none of them granted, the child gets no registry. */
export const SPAWNING_CAPS: readonly string[] = ['commands', 'exec', 'parallel'];

const hashes = new WeakMap<Uint8Array, string>();
const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const hashOf = (b: Uint8Array): string => {
  let h = hashes.get(b);
  if (h === undefined) hashes.set(b, (h = sha256(b)));
  return h;
};

/** The parent's registry as the child needs it (the toolchain's tools are not sent). */
export function commandManifest(registry: CommandRegistry, shelf: CommandShelf): CommandEntry[] {
  return registry.entries().map((e) => {
    const sha256 = hashOf(e.bytes);
    const how = e.builtin ? { builtin: true as const } : e.bytes.byteLength >= INLINE_MAX_BYTES ? { path: shelf.place(sha256, e.bytes) } : { b64: toB64(e.bytes) };
    return { name: e.name, sha256, ...how, ...(e.declared ? { declared: e.declared } : {}) };
  });
}

const COMMAND_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/;

/** The child's registry: empty at boot, filled from the request's manifest. */
export class ChildRegistry extends CommandRegistry {
  /** The module the parent admitted for this call (its `requireSigned` gate ran there). */
  private admitted: Uint8Array | null = null;

  /** The parent's commands, from the request (entries that do not check out are left out). */
  fill(entries: readonly CommandEntry[]): void {
    for (const e of entries) {
      if (typeof e !== 'object' || e === null || typeof e.name !== 'string' || !COMMAND_NAME.test(e.name) || typeof e.sha256 !== 'string') continue;
      let bytes: Uint8Array;
      try {
        if (e.builtin === true) bytes = new Uint8Array(readFileSync(join(packageRoot(), 'commands', 'bin', `${e.name}.wasm`)));
        else if (typeof e.path === 'string') bytes = new Uint8Array(readFileSync(e.path));
        else bytes = fromB64(String(e.b64));
      } catch {
        continue; // a built-in this package lacks: not a command here either
      }
      if (sha256(bytes) !== e.sha256) continue;
      this.register(e.name, bytes, e.declared);
    }
  }

  /** The call's module (the very buffer run): the parent's gate already held for it. */
  admit(bytes: Uint8Array): void {
    this.admitted = bytes;
  }

  override isRegisteredModule(bytes: Uint8Array): boolean {
    return (this.admitted !== null && bytes === this.admitted) || super.isRegisteredModule(bytes);
  }
}
