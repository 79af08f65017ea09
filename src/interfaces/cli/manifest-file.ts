/**
 * Reading a toolkit manifest file for the CLI: JSON, or TOML for a `.toml` file (smol-toml,
 * loaded lazily), at most 1 MiB.
 * Invariant: an unreadable, oversized or malformed file is POLICY_INVALID naming the file, never a
 * parser's stack or message.
 * Does not protect against: what the manifest declares — its checks are policy/toolkit.ts and
 * engine/toolkit-install.ts.
 */

import { readFileSync } from 'node:fs';
import { SandboxError } from '../../errors.ts';

const MAX_MANIFEST_BYTES = 1024 * 1024;

export async function readManifest(file: string): Promise<unknown> {
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
