/**
 * `membrane receipt verify RECEIPT` (offline: the engine's signature over every field) and
 * `membrane replay RECEIPT --module M --input I` (re-run a pure guest, compare the output hash;
 * an exec receipt takes the snippet's `--source FILE` or `-c CODE` instead of `--module`).
 * Exit 0 when the receipt verifies (replay: reproduces); 1 when it does not (replay: refused or
 * different) — the receipt failed, not the command; unreadable files use the error table.
 */

import { readFileSync } from 'node:fs';
import { SandboxError } from '../../errors.ts';
import { checkReceipt, parseReceipt, normalizeInput, MAX_RECEIPT_BYTES, type AnySignedReceipt, type RunInput, type SignedReceipt } from '../../provenance/receipt.ts';
import { EXEC_RECEIPT_TYPE, type SignedExecReceipt } from '../../provenance/exec-receipt.ts';
import { UsageError, loadModule, parse, printJson, str, strs } from './args.ts';
import { safeJson } from './audit.ts';

/** The receipt did not verify, or the replay was refused or differs. */
export const RECEIPT_FAILED_EXIT = 1;

function readText(file: string, what: string, max: number): string {
  let data: Buffer;
  try {
    data = readFileSync(file);
  } catch {
    throw new SandboxError('POLICY_INVALID', `cannot read the ${what} file "${file}"`);
  }
  if (data.length > max) throw new SandboxError('POLICY_INVALID', `the ${what} file is over ${max} bytes`);
  return data.toString('utf8');
}

function readInput(file: string): RunInput {
  let v: unknown;
  try {
    v = JSON.parse(readText(file, 'input', 16 * 1024 * 1024));
  } catch (e) {
    if (e instanceof SandboxError) throw e;
    throw new SandboxError('POLICY_INVALID', 'the input file is not JSON');
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new SandboxError('POLICY_INVALID', 'the input file is a JSON object { invoke?, args?, argv?, env?, stdin? }');
  const o = v as Record<string, unknown>;
  const strings = (x: unknown): x is string[] => Array.isArray(x) && x.every((s) => typeof s === 'string');
  if ((o['invoke'] !== undefined && typeof o['invoke'] !== 'string') || (o['args'] !== undefined && !strings(o['args'])) || (o['argv'] !== undefined && !strings(o['argv'])) || (o['stdin'] !== undefined && typeof o['stdin'] !== 'string')) {
    throw new SandboxError('POLICY_INVALID', 'the input file\'s invoke and stdin (base64) are strings; args and argv arrays of strings');
  }
  if (o['env'] !== undefined && (o['env'] === null || typeof o['env'] !== 'object' || !Object.values(o['env']).every((x) => typeof x === 'string'))) throw new SandboxError('POLICY_INVALID', 'the input file\'s env maps names to strings');
  return normalizeInput(o as RunInput);
}

function verifiedReceipt(file: string, trust: readonly string[]): { signed: AnySignedReceipt | null; reason: string | null; signer: string | null } {
  const parsed = parseReceipt(readText(file, 'receipt', MAX_RECEIPT_BYTES + 1));
  const check = checkReceipt(parsed, trust.length > 0 ? trust : undefined);
  return { signed: check.valid && typeof parsed !== 'string' ? parsed : null, reason: check.reason, signer: check.signer };
}

async function verify(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { trust: { type: 'string', multiple: true }, json: { type: 'boolean' } });
  if (positionals.length !== 1) throw new UsageError('receipt verify takes exactly one RECEIPT file');
  const v = verifiedReceipt(positionals[0]!, strs(values['trust']));
  const out = { valid: v.signed !== null, signer: v.signer, reason: v.reason, ...(v.signed ? { receipt: v.signed.receipt } : {}) };
  if (values['json'] === true) printJson(out);
  else process.stdout.write(out.valid ? `ok: signed by ${safeJson(v.signer)}\n` : `invalid: ${safeJson(v.reason)}\n`);
  return out.valid ? 0 : RECEIPT_FAILED_EXIT;
}

export async function receiptCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === 'verify') return verify(rest);
  throw new UsageError(sub === undefined ? 'receipt needs a subcommand: verify' : `unknown receipt subcommand "${sub}" (verify)`);
}

export async function replayCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, {
    module: { type: 'string' },
    source: { type: 'string' },
    command: { type: 'string', short: 'c' },
    input: { type: 'string' },
    trust: { type: 'string', multiple: true },
    json: { type: 'boolean' },
  });
  if (positionals.length !== 1) throw new UsageError('replay takes exactly one RECEIPT file');
  const json = values['json'] === true;
  const v = verifiedReceipt(positionals[0]!, strs(values['trust']));
  if (!v.signed) {
    if (json) printJson({ replayed: false, reason: `the receipt does not verify: ${v.reason}` });
    else process.stdout.write(`refused: the receipt does not verify: ${safeJson(v.reason)}\n`);
    return RECEIPT_FAILED_EXIT;
  }
  const report = v.signed.receipt.type === EXEC_RECEIPT_TYPE ? await replayExec(v.signed as SignedExecReceipt, values) : await replayRun(v.signed as SignedReceipt, values);
  if (json) printJson(report);
  else if (!report.replayed) process.stdout.write(`refused: ${report.reason}\n`);
  else process.stdout.write(report.reason === null ? 'reproduced: the output hash and fuel match the receipt\n' : `differs: ${report.reason}\n`);
  return report.replayed && report.reason === null ? 0 : RECEIPT_FAILED_EXIT;
}

type Flags = Record<string, string | boolean | (string | boolean)[] | undefined>;

async function replayRun(signed: SignedReceipt, values: Flags): Promise<{ replayed: boolean; reason: string | null }> {
  const modulePath = str(values['module']);
  if (modulePath === undefined) throw new UsageError('replay needs --module M (the module the receipt names)');
  const inputPath = str(values['input']);
  const input = inputPath === undefined ? {} : readInput(inputPath);
  const bytes = await loadModule(modulePath);
  const { createEngine } = await import('../../engine/index.ts');
  const { replayReceipt } = await import('../../engine/receipts.ts');
  const engine = createEngine({ poolSize: 1, fuel: signed.receipt.fuelMetered });
  try {
    return await replayReceipt((b, o) => engine.run(b, o), signed, bytes, input);
  } finally {
    await engine.close();
  }
}

/** An exec receipt: the snippet's source (--source FILE or -c CODE) and its input file `{ context }`. */
async function replayExec(signed: SignedExecReceipt, values: Flags): Promise<{ replayed: boolean; reason: string | null }> {
  const file = str(values['source']);
  const inline = str(values['command']);
  if ((file === undefined) === (inline === undefined)) throw new UsageError('replaying an exec receipt needs the snippet: --source FILE or -c CODE');
  const code = inline ?? readText(file!, 'source', 1024 * 1024);
  const inputPath = str(values['input']);
  let context: unknown;
  if (inputPath !== undefined) {
    let v: unknown;
    try {
      v = JSON.parse(readText(inputPath, 'input', 16 * 1024 * 1024));
    } catch (e) {
      if (e instanceof SandboxError) throw e;
      throw new SandboxError('POLICY_INVALID', 'the input file is not JSON');
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v) || Object.keys(v).some((k) => k !== 'context')) throw new SandboxError('POLICY_INVALID', 'an exec input file is a JSON object { context? }');
    context = (v as { context?: unknown }).context;
  }
  const { createEngine } = await import('../../engine/index.ts');
  const { replayExecReceipt } = await import('../../engine/receipts.ts');
  const engine = createEngine({ poolSize: 0, fuel: signed.receipt.fuelMetered });
  try {
    return await replayExecReceipt((o) => engine.exec(o), signed, code, context);
  } finally {
    await engine.close();
  }
}
