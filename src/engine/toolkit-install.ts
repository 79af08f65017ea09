/**
 * Installing a toolkit: a manifest `{ name, caps: [...], commands: { NAME: FILE.wasm } }` whose
 * declared caps are what the installer grants. Each command module's imports are checked against
 * the declaration before any is registered; then every command is registered with it
 * (registry.ts), so it runs under its caller's grant cut to the declaration.
 *
 * Owns: parsing the manifest's shape (as untrusted input: bounded, exact types), the declaration
 * check of every import, and the all-or-nothing registration.
 * Invariant: a toolkit whose caps `membrane verify` would refuse (an unknown word, a set no profile
 * grants) installs nothing (POLICY_INVALID); a module importing anything whose cap is outside the
 * declaration installs nothing — LINK_UNSATISFIED naming the command, each such import, the cap it
 * needs and the declared set ("the declaration is narrower"). Registered bytes are a copy, so the
 * checked module is the one that runs.
 *
 * Does not protect against: imports no cap grants or with a wrong signature — the linker refuses
 * those when the command runs, as for any module; a caller granted less than the declaration (the
 * command then gets the smaller grant: the intersection, never the union).
 */

import { SandboxError, type DetailValue } from '../errors.ts';
import { importKey, lookupImport } from '../policy/catalog.ts';
import { isHostCapName } from '../policy/host-caps.ts';
import { verifyToolkitCaps, type Declaration } from '../policy/toolkit.ts';
import { describeModule } from '../wasm/index.ts';
import type { CommandRegistry } from './registry.ts';

/** A toolkit names at most this many commands. */
export const MAX_TOOLKIT_COMMANDS = 256;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/;

export interface ToolkitSpec {
  readonly name: string;
  readonly caps: readonly string[];
  /** Command name → module file, relative to the manifest (the CLI reads them). */
  readonly commands: Readonly<Record<string, string>>;
}

/** The manifest's shape (JSON or TOML parsed by the caller), or POLICY_INVALID saying why. */
export function parseToolkitManifest(value: unknown): ToolkitSpec {
  const bad = (why: string): never => {
    throw new SandboxError('POLICY_INVALID', `toolkit manifest: ${why}`);
  };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return bad('not an object');
  const o = value as Record<string, unknown>;
  const name = o['name'];
  if (typeof name !== 'string' || !NAME.test(name)) return bad('name is 1-64 of [A-Za-z0-9._+-]');
  if (!Array.isArray(o['caps'])) return bad('it declares no caps list (caps: [...])');
  const commands = o['commands'];
  if (commands === null || typeof commands !== 'object' || Array.isArray(commands)) return bad('commands is a table of NAME = "FILE.wasm"');
  const entries = Object.entries(commands as Record<string, unknown>);
  if (entries.length === 0 || entries.length > MAX_TOOLKIT_COMMANDS) return bad(`it names 1 to ${MAX_TOOLKIT_COMMANDS} commands`);
  for (const [k, v] of entries) if (!NAME.test(k) || typeof v !== 'string' || v.length === 0 || v.length > 4096) return bad(`command "${k.slice(0, 64)}" is a name and a module file`);
  return { name, caps: o['caps'] as string[], commands: commands as Record<string, string> };
}

/** The verified declaration of a toolkit's caps, or POLICY_INVALID with `membrane verify`'s reason. */
export function declarationOfToolkit(name: string, caps: readonly unknown[]): Declaration {
  const v = verifyToolkitCaps(caps);
  if (!v.ok) throw new SandboxError('POLICY_INVALID', `toolkit "${name}" cannot be installed: ${v.reason}`, { toolkit: name });
  return { toolkit: name, caps: v.caps, hostCaps: v.hostCaps };
}

interface Beyond {
  readonly import: string;
  readonly cap: string;
}

/** The imports of `bytes` whose cap (a cap word or a host cap) the declaration leaves out. */
export function importsBeyond(bytes: Uint8Array, declared: Declaration): Beyond[] {
  const out: Beyond[] = [];
  for (const imp of describeModule(bytes).imports) {
    const key = importKey(imp.module, imp.name);
    if (isHostCapName(imp.module)) {
      if (!declared.hostCaps.includes(imp.module)) out.push({ import: key, cap: imp.module });
      continue;
    }
    const grant = lookupImport(imp.module, imp.name)?.grant;
    if (grant === undefined || grant === 'ambient' || grant === 'never') continue; // the linker's own refusal, at run time
    if (!(declared.caps as readonly string[]).includes(grant)) out.push({ import: key, cap: grant });
  }
  return out;
}

/** LINK_UNSATISFIED unless every import of `bytes` is inside the declaration. */
export function checkDeclared(command: string, bytes: Uint8Array, declared: Declaration): void {
  const beyond = importsBeyond(bytes, declared);
  if (beyond.length === 0) return;
  const set = [...declared.caps, ...declared.hostCaps];
  const named = beyond.map((b) => `${b.import} needs cap "${b.cap}"`).join('; ');
  throw new SandboxError(
    'LINK_UNSATISFIED',
    `toolkit "${declared.toolkit}" command "${command}" imports beyond its declaration: ${named} — the toolkit declares caps [${set.join(', ')}], narrower than its module needs`,
    {
      toolkit: declared.toolkit,
      command,
      declared: set,
      missing: beyond.map((b): DetailValue => ({ import: b.import, cap: b.cap, reason: 'outside the toolkit\'s declared caps' })),
    },
  );
}

/**
 * Install a toolkit's commands into `registry` under its declaration: every module is checked
 * first; any refusal installs none.
 */
export function installToolkit(registry: CommandRegistry, name: string, caps: readonly unknown[], modules: Readonly<Record<string, Uint8Array>>): Declaration {
  if (typeof name !== 'string' || !NAME.test(name)) throw new SandboxError('POLICY_INVALID', 'a toolkit name is 1-64 of [A-Za-z0-9._+-]');
  const entries = Object.entries(modules);
  if (entries.length === 0 || entries.length > MAX_TOOLKIT_COMMANDS) throw new SandboxError('POLICY_INVALID', `a toolkit installs 1 to ${MAX_TOOLKIT_COMMANDS} commands`);
  const declared = declarationOfToolkit(name, caps);
  for (const [command, bytes] of entries) if (!NAME.test(command) || !(bytes instanceof Uint8Array)) throw new SandboxError('POLICY_INVALID', `toolkit "${name}": command "${String(command).slice(0, 64)}" is a name and module bytes`);
  const copies = entries.map(([command, bytes]): [string, Uint8Array] => [command, new Uint8Array(bytes)]);
  for (const [command, bytes] of copies) checkDeclared(command, bytes, declared);
  for (const [command, bytes] of copies) registry.register(command, bytes, declared);
  return declared;
}
