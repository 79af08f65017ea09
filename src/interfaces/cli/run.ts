/**
 * `membrane run MODULE [flags] [-- ARGS...]`: run `_start` or an export once, in a fresh
 * sandbox, and print the result (DESIGN §9). Numeric flags: units.ts; a file `membrane instrument`
 * wrote runs its original, metered once (instrumented.ts).
 */

import { readFileSync, writeFileSync } from 'node:fs';
import { createEngine, type RunOptions } from '../../engine/index.ts';
import { runInputOf } from '../../engine/receipts.ts';
import { readSignedArtifact } from '../../provenance/artifact.ts';
import { SecretStore } from '../../brokers/secrets.ts';
import type { RunResult } from '../../engine/results.ts';
import { SandboxError, exitCodeFor, toSandboxError } from '../../errors.ts';
import { failure } from '../../engine/results.ts';
import { UsageError, commandRegistry, loadModule, parse, printJson, str, strs } from './args.ts';
import { limitFlags } from './units.ts';
import { cliCall } from './live.ts';
import { runnableModule } from './instrumented.ts';
import { readDidDocuments } from './sign.ts';

export const RUN_OPTIONS = {
  profile: { type: 'string' },
  timeout: { type: 'string' },
  fuel: { type: 'string' },
  'no-fuel': { type: 'boolean' },
  memory: { type: 'string' },
  invoke: { type: 'string' },
  arg: { type: 'string', multiple: true },
  stdin: { type: 'string' },
  mount: { type: 'string', multiple: true },
  env: { type: 'string', multiple: true },
  tenant: { type: 'string' },
  vfs: { type: 'string' },
  register: { type: 'string', multiple: true },
  toolkit: { type: 'string', multiple: true },
  'secrets-file': { type: 'string' },
  'allow-cidr': { type: 'string', multiple: true },
  caps: { type: 'string' },
  json: { type: 'boolean' },
  'strict-profiles': { type: 'boolean' },
  receipt: { type: 'string' },
  artifact: { type: 'string' },
  'require-signed': { type: 'string', multiple: true },
  'did-doc': { type: 'string', multiple: true },
  'did-web-fetch': { type: 'boolean' },
} as const;

export async function runCommand(argv: string[]): Promise<number> {
  const { values, positionals, rest } = parse(argv, RUN_OPTIONS);
  const json = values['json'] === true;
  const file = positionals[0];
  if (!file || positionals.length > 1) throw new UsageError('run takes exactly one MODULE (.wasm or .wat); guest arguments go after --');
  const env: Record<string, string> = {};
  for (const kv of strs(values['env'])) {
    const eq = kv.indexOf('=');
    if (eq <= 0) throw new UsageError(`--env expects K=V, got "${kv}"`);
    env[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  const limits = limitFlags(values);
  const noFuel = values['no-fuel'] === true;
  if (noFuel && limits.fuel !== undefined) throw new UsageError('--fuel and --no-fuel exclude each other');
  const stdinPath = str(values['stdin']);
  const receiptFile = str(values['receipt']);
  const commands = await commandRegistry(strs(values['register']), strs(values['toolkit']));
  // Secrets reach host memory only: MEMBRANE_SECRET_<NAME> variables and --secrets-file JSON.
  const secretsFile = str(values['secrets-file']);
  const secrets = { ...SecretStore.fromEnv(), ...(secretsFile ? SecretStore.fromFile(secretsFile) : {}) };
  const requireSigned = strs(values['require-signed']);
  const artifactFile = str(values['artifact']);
  const artifact = artifactFile !== undefined ? readSignedArtifact(artifactFile) : undefined;
  const engine = createEngine({ poolSize: 1, strictProfiles: values['strict-profiles'] === true, fuel: !noFuel, commands, brokers: { secrets, net: { allowCidrs: strs(values['allow-cidr']) } }, ...(requireSigned.length > 0 ? { requireSigned, didDocuments: Object.fromEntries(readDidDocuments(strs(values['did-doc']))), didWebFetch: values['did-web-fetch'] === true } : {}) });
  let result: RunResult;
  const live = cliCall(json);
  try {
    const bytes = runnableModule(await loadModule(file));
    const capsFlag = str(values['caps']);
    const opts: RunOptions = {
      ...(str(values['profile']) !== undefined ? { profile: str(values['profile'])! } : {}),
      ...limits,
      ...(str(values['invoke']) !== undefined ? { invoke: str(values['invoke'])!, args: strs(values['arg']) } : {}),
      ...(stdinPath !== undefined ? { stdin: readStdin(stdinPath) } : {}),
      ...(str(values['tenant']) !== undefined ? { tenant: str(values['tenant'])! } : {}),
      ...(str(values['vfs']) !== undefined ? { vfs: str(values['vfs'])! } : {}),
      mounts: strs(values['mount']),
      ...(capsFlag !== undefined ? { caps: capsFlag.split(',').map((c) => c.trim()).filter(Boolean) } : {}),
      env,
      argv: rest,
      ...live.controls,
      ...(receiptFile !== undefined ? { receipt: true } : {}),
      ...(artifact !== undefined ? { artifact } : {}),
    };
    result = await engine.run(bytes, opts);
    if (receiptFile !== undefined) writeReceipt(receiptFile, result, opts);
  } catch (e) {
    result = failure(toSandboxError(e), { profile: str(values['profile']) ?? 'compute', warnings: [] });
  } finally {
    await engine.close();
  }
  live.finish(result);
  if (json) printJson(result);
  else printHuman(result);
  return exitCodeOf(result);
}

/** `--receipt FILE`: the signed receipt in FILE and the input it hashes in FILE.input.json (for `membrane replay`). */
function writeReceipt(file: string, result: RunResult, opts: RunOptions): void {
  if (!result.receipt) return;
  writeFileSync(file, `${JSON.stringify(result.receipt, null, 2)}\n`);
  writeFileSync(`${file}.input.json`, `${JSON.stringify(runInputOf(opts), null, 2)}\n`);
}

function readStdin(path: string): Uint8Array {
  try {
    return new Uint8Array(readFileSync(path));
  } catch {
    throw new SandboxError('POLICY_INVALID', `cannot read --stdin file "${path}"`, { path });
  }
}

export function exitCodeOf(r: RunResult): number {
  if (r.exitCode !== undefined) return r.exitCode & 0xff;
  if (r.ok) return 0;
  return exitCodeFor(r.error!.code);
}

/** After the call: its output was streamed (live.ts); what remains is the verdict. */
function printHuman(r: RunResult): void {
  for (const w of r.warnings) process.stderr.write(`membrane: warning: ${w}\n`);
  if (r.ok && r.result !== undefined && r.result !== null) process.stdout.write(`${JSON.stringify(r.result)}\n`);
  if (!r.ok && r.error && r.error.code !== 'GUEST_EXIT') process.stderr.write(`membrane: ${r.error.code}: ${r.error.message}\n`);
}
