/**
 * CLI plumbing shared by the commands: option parsing with `node:util`, loading a module from a
 * `.wasm` or `.wat` file, and printing errors.
 *
 * Invariant: the CLI is thin — it parses, calls the engine, maps error codes to exit codes
 * (ERROR_TABLE); it never prints a host stack trace.
 */

import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { SandboxError, exitCodeFor, toSandboxError } from '../../errors.ts';
import { CommandRegistry } from '../../engine/index.ts';
import { USAGE_EXIT, UsageError } from './usage.ts';
import { compileWat } from './wat.ts';

export { USAGE_EXIT, UsageError } from './usage.ts';

export type Options = NonNullable<ParseArgsConfig['options']>;

export function parse(argv: string[], options: Options): { values: Record<string, string | boolean | (string | boolean)[] | undefined>; positionals: string[]; rest: string[] } {
  const cut = argv.indexOf('--');
  const mine = cut >= 0 ? argv.slice(0, cut) : argv;
  const rest = cut >= 0 ? argv.slice(cut + 1) : [];
  try {
    const { values, positionals } = parseArgs({ args: mine, options, allowPositionals: true, strict: true });
    return { values, positionals, rest };
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    const unknown = /^Unknown option '([^']*)'/.exec(message);
    throw new UsageError(unknown ? `unknown option '${unknown[1]}'` : message.split('\n')[0]!);
  }
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function strs(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : typeof v === 'string' ? [v] : [];
}

/** Read a module file; `.wat` text is compiled with wabt. */
export async function loadModule(path: string): Promise<Uint8Array> {
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch {
    throw new SandboxError('INVALID_MODULE', `cannot read module file "${path}"`, { path });
  }
  if (!path.endsWith('.wat') && !path.endsWith('.wast')) return new Uint8Array(data);
  return compileWat(path, data.toString('utf8'));
}

/**
 * The built-in commands, every `--toolkit MANIFEST` (its commands installed under its declared
 * caps: engine/toolkit-install.ts; module files relative to the manifest), then every
 * `--register NAME=FILE.wasm` (a later flag wins).
 */
export async function commandRegistry(flags: readonly string[], toolkits: readonly string[] = []): Promise<CommandRegistry> {
  const registry = CommandRegistry.withBuiltins();
  if (toolkits.length > 0) {
    const [{ readManifest }, { installToolkit, parseToolkitManifest }] = await Promise.all([import('./manifest-file.ts'), import('../../engine/toolkit-install.ts')]);
    for (const file of toolkits) {
      const spec = parseToolkitManifest(await readManifest(file));
      const modules: Record<string, Uint8Array> = {};
      for (const [name, path] of Object.entries(spec.commands)) modules[name] = await loadModule(resolve(dirname(file), path));
      installToolkit(registry, spec.name, spec.caps, modules);
    }
  }
  for (const flag of flags) {
    const eq = flag.indexOf('=');
    if (eq <= 0 || eq === flag.length - 1) throw new UsageError(`--register expects NAME=FILE.wasm, got "${flag}"`);
    registry.register(flag.slice(0, eq), await loadModule(flag.slice(eq + 1)));
  }
  return registry;
}

/** Print an error for a human; returns the exit code. `command` names the help to point at. */
export function reportError(e: unknown, command?: string): number {
  if (e instanceof UsageError) {
    process.stderr.write(`membrane${command ? ` ${command}` : ''}: ${e.message}\nTry 'membrane ${command ? `${command} ` : ''}--help'.\n`);
    return USAGE_EXIT;
  }
  const err = toSandboxError(e);
  process.stderr.write(`membrane: ${err.code}: ${err.message}\n`);
  return exitCodeFor(err.code);
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function jsonError(e: unknown): { ok: false; error: ReturnType<SandboxError['toPublic']> } {
  return { ok: false, error: toSandboxError(e).toPublic() };
}
