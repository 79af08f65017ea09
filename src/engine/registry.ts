/**
 * The command registry: names → WASI command modules (`.wasm` with `_start`).
 *
 * Owns: the built-in set (commands/bin/*.wasm, compiled from commands/src in this repo) and
 * operator registrations, with the toolkit declaration a command was installed under. Invariant: a name resolves only to a module the operator registered or
 * shipped; a guest cannot register anything, and names are plain words (no paths).
 *
 * Does not protect against: an operator registering a hostile module — it still runs in the
 * sandbox like any guest.
 */

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxError } from '../errors.ts';
import { packageRoot } from '../storage/package-root.ts';
import type { ImageMount } from '../storage/vfs-config.ts';
import { findToolchain, TOOL_NAMES, type Toolchain } from '../build/toolchain.ts';
import { driverPrefix, toolArgs } from '../build/driver.ts';
import { narrowToDeclaration, type Declaration } from '../policy/toolkit.ts';
import type { CapWord } from '../policy/profiles.ts';

const COMMAND_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/;

function builtinDir(): string | null {
  const dir = join(packageRoot(), 'commands', 'bin');
  return existsSync(dir) ? dir : null;
}

export class CommandRegistry {
  private readonly modules = new Map<string, Uint8Array>();
  private readonly builtins = new Map<string, string>();
  /** Names whose module in `modules` was loaded from the built-in file (not registered over it). */
  private readonly loaded = new Set<string>();
  /** Toolkit declarations of installed commands (the grant they run under, at most). */
  private readonly declared = new Map<string, Declaration>();
  /** The in-sandbox toolchain (clang, clang++, wasm-ld, llvm-ar), when `@yowasp/clang` is installed. */
  private toolchain: Toolchain | null = null;

  /**
   * A registry with the built-in commands (loaded on first use) and, when the optional toolchain
   * package is installed, the LLVM tools — one module told apart by argv[0], each mounting the
   * shared read-only sysroot (src/build/toolchain.ts).
   */
  static withBuiltins(options: { cacheDir?: string | null } = {}): CommandRegistry {
    const r = new CommandRegistry();
    const dir = builtinDir();
    if (dir) {
      for (const f of readdirSync(dir)) if (f.endsWith('.wasm')) r.builtins.set(f.slice(0, -5), join(dir, f));
    }
    r.toolchain = findToolchain(options.cacheDir ?? null);
    return r;
  }

  /** Image VFSes a command mounts beside its caller's VFS: a toolchain tool's sysroot; else none. */
  imagesFor(name: string): readonly ImageMount[] {
    if (!this.isToolchainTool(name)) return [];
    return [this.toolchain!.sysroot()];
  }

  /**
   * The arguments a command runs with after argv[0]: a toolchain driver gets its target and
   * sysroot flags first (src/build/driver.ts); every other command exactly `args`.
   */
  argsFor(name: string, args: readonly string[]): string[] {
    return this.isToolchainTool(name) ? toolArgs(name, args) : [...args];
  }

  /** What `argsFor` puts before a caller's arguments (empty for every command but a toolchain driver). */
  argsPrefix(name: string): string[] {
    return this.isToolchainTool(name) ? driverPrefix(name) : [];
  }

  /** `bytes` is the toolchain's own module buffer (engine-owned, never mutated). */
  isToolchainModule(bytes: Uint8Array): boolean {
    return this.toolchain !== null && this.toolchain.loaded() === bytes;
  }

  /** `bytes` is the very buffer a command was registered (or loaded) with, or the toolchain's: the operator's module, not a caller's. */
  isRegisteredModule(bytes: Uint8Array): boolean {
    if (this.isToolchainModule(bytes)) return true;
    for (const m of this.modules.values()) if (m === bytes) return true;
    return false;
  }

  /** `name` resolves to a toolchain tool (not overridden by an operator's registration). */
  isToolchainTool(name: string): boolean {
    return this.toolchain !== null && !this.modules.has(name) && (TOOL_NAMES as readonly string[]).includes(name);
  }

  /**
   * Register a command. With `declared` (engine/toolkit-install.ts, after checking the module's
   * imports against it), the command runs under its caller's grant cut to that declaration;
   * registering the name again without one drops it.
   */
  register(name: string, bytes: Uint8Array, declared?: Declaration): void {
    if (!COMMAND_NAME.test(name)) throw new SandboxError('POLICY_INVALID', 'a command name is 1-64 of [A-Za-z0-9._+-]', { name: name.slice(0, 64) });
    this.modules.set(name, bytes);
    this.loaded.delete(name);
    if (declared) this.declared.set(name, declared);
    else this.declared.delete(name);
  }

  /** The toolkit declaration a command was installed with, if any. */
  declarationOf(name: string): Declaration | undefined {
    return this.declared.get(name);
  }

  /** The grant `name` runs under when `caller` runs it: the caller's, cut to the command's declaration. */
  policyFor<P extends { readonly caps: readonly CapWord[]; readonly hostCaps: readonly string[] }>(name: string, caller: P): P {
    return narrowToDeclaration(caller, this.declared.get(name));
  }

  get(name: string): Uint8Array | undefined {
    if (!COMMAND_NAME.test(name)) return undefined;
    const hit = this.modules.get(name);
    if (hit) return hit;
    if (this.isToolchainTool(name)) return this.toolchain!.module();
    const file = this.builtins.get(name);
    if (!file) return undefined;
    const bytes = new Uint8Array(readFileSync(file));
    this.modules.set(name, bytes);
    this.loaded.add(name);
    return bytes;
  }

  /**
   * Every command but the toolchain's tools, as an os_process child needs them
   * (engine/os-process/commands.ts): its module, whether it is a built-in (the package's own
   * commands/bin file, which the child reads itself), its toolkit declaration.
   */
  entries(): { name: string; bytes: Uint8Array; builtin: boolean; declared?: Declaration }[] {
    const out: { name: string; bytes: Uint8Array; builtin: boolean; declared?: Declaration }[] = [];
    for (const name of new Set([...this.modules.keys(), ...this.builtins.keys()])) {
      if (this.isToolchainTool(name)) continue;
      const bytes = this.get(name);
      if (!bytes) continue;
      const declared = this.declared.get(name);
      out.push({ name, bytes, builtin: this.loaded.has(name), ...(declared ? { declared } : {}) });
    }
    return out;
  }

  names(): string[] {
    return [...new Set([...this.modules.keys(), ...this.builtins.keys(), ...(this.toolchain ? TOOL_NAMES : [])])].sort();
  }
}
