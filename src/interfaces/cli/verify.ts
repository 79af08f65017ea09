/**
 * `membrane verify TOOLKIT`: a toolkit manifest (JSON, or TOML for a `.toml` file) declares
 * `caps = [...]`; print the profiles that grant them all (the minimal one first), or name the
 * unknown words, or say why no profile can (src/policy/toolkit.ts). Nothing runs.
 * Exit 0 when some profile grants the set; 1 when none does or a word is unknown.
 */

import { readFileSync } from 'node:fs';
import { SandboxError } from '../../errors.ts';
import { verifyToolkitCaps } from '../../policy/toolkit.ts';
import { UsageError, parse, printJson } from './args.ts';
import { safeJson } from './audit.ts';

/** No profile grants the declared caps, or one is unknown. */
export const NOT_GRANTABLE_EXIT = 1;
const MAX_MANIFEST_BYTES = 1024 * 1024;

async function readManifest(file: string): Promise<unknown> {
  let text: string;
  try {
    const data = readFileSync(file);
    if (data.length > MAX_MANIFEST_BYTES) throw new SandboxError('POLICY_INVALID', `a toolkit manifest is at most ${MAX_MANIFEST_BYTES} bytes`);
    text = data.toString('utf8');
  } catch (e) {
    if (e instanceof SandboxError) throw e;
    throw new SandboxError('POLICY_INVALID', `cannot read the toolkit manifest "${file}"`);
  }
  const toml = file.endsWith('.toml');
  try {
    return toml ? (await import('smol-toml')).parse(text) : (JSON.parse(text) as unknown);
  } catch {
    throw new SandboxError('POLICY_INVALID', `the toolkit manifest is not valid ${toml ? 'TOML' : 'JSON'}`);
  }
}

export async function verifyCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: 'boolean' } });
  if (positionals.length !== 1) throw new UsageError('verify takes exactly one TOOLKIT manifest (JSON or .toml)');
  const manifest = await readManifest(positionals[0]!);
  const declared = manifest !== null && typeof manifest === 'object' && !Array.isArray(manifest) ? (manifest as Record<string, unknown>)['caps'] : undefined;
  const v = verifyToolkitCaps(declared);
  if (values['json'] === true) printJson(v);
  else if (v.ok) {
    process.stdout.write(`ok: caps ${v.caps.join(', ') || '(none)'} are granted by ${v.profiles.join(', ')} (minimal: ${v.minimal})\n`);
    if (v.hostCaps.length > 0) process.stdout.write(`host caps ${v.hostCaps.join(', ')} are granted by the operator (token --host-cap), not by a profile\n`);
  } else process.stdout.write(`not grantable: ${safeJson(v.reason)}\n`);
  return v.ok ? 0 : NOT_GRANTABLE_EXIT;
}
