/**
 * `membrane verify TOOLKIT`: a toolkit manifest (JSON, or TOML for a `.toml` file) declares
 * `caps = [...]`; print the profiles that grant them all (the minimal one first), or name the
 * unknown words, or say why no profile can (src/policy/toolkit.ts). Nothing runs.
 * Exit 0 when some profile grants the set; 1 when none does or a word is unknown.
 */

import { dirname, resolve } from 'node:path';
import { toSandboxError } from '../../errors.ts';
import { verifyToolkitCaps } from '../../policy/toolkit.ts';
import { UsageError, loadModule, parse, printJson } from './args.ts';
import { safeJson } from './audit.ts';
import { readManifest } from './manifest-file.ts';

/** No profile grants the declared caps, or one is unknown. */
export const NOT_GRANTABLE_EXIT = 1;
export async function verifyCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: 'boolean' } });
  if (positionals.length !== 1) throw new UsageError('verify takes exactly one TOOLKIT manifest (JSON or .toml)');
  const manifest = await readManifest(positionals[0]!);
  const declared = manifest !== null && typeof manifest === 'object' && !Array.isArray(manifest) ? (manifest as Record<string, unknown>)['caps'] : undefined;
  const caps = verifyToolkitCaps(declared);
  // A manifest that names its commands: each module's imports must stay inside the declaration.
  const commands = caps.ok ? await commandsBeyond(positionals[0]!, manifest) : null;
  const v = commands === null ? caps : { ...caps, ok: false, reason: commands };
  if (values['json'] === true) printJson(v);
  else if (v.ok) {
    process.stdout.write(`ok: caps ${v.caps.join(', ') || '(none)'} are granted by ${v.profiles.join(', ')} (minimal: ${v.minimal})\n`);
    if (v.hostCaps.length > 0) process.stdout.write(`host caps ${v.hostCaps.join(', ')} are granted by the operator (token --host-cap), not by a profile\n`);
  } else process.stdout.write(`not grantable: ${safeJson(v.reason)}\n`);
  return v.ok ? 0 : NOT_GRANTABLE_EXIT;
}

/** Why the manifest's command modules cannot install under its declaration (null: they can, or it names none). */
async function commandsBeyond(file: string, manifest: unknown): Promise<string | null> {
  if (manifest === null || typeof manifest !== 'object' || (manifest as Record<string, unknown>)['commands'] === undefined) return null;
  const { parseToolkitManifest, checkDeclared, declarationOfToolkit } = await import('../../engine/toolkit-install.ts');
  try {
    const spec = parseToolkitManifest(manifest);
    const declared = declarationOfToolkit(spec.name, spec.caps);
    for (const [command, path] of Object.entries(spec.commands)) checkDeclared(command, await loadModule(resolve(dirname(file), path)), declared);
    return null;
  } catch (e) {
    return toSandboxError(e).message;
  }
}
