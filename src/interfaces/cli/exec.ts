/**
 * `membrane exec --lang js|ts|python (-c CODE | FILE) [--profile P] [--timeout DURATION] [--fuel COUNT]
 * [--memory SIZE] [--context JSON] [--vfs NAME] [--receipt FILE] [--json]`: run untrusted source in its lane
 * (DESIGN §7, §9); `--vfs NAME` gives the snippet's `vfs.*` powers and commands the named
 * persistent VFS (the one `membrane run --vfs NAME` uses) instead of a private one; `--receipt
 * FILE` writes a signed exec receipt to FILE and the context it hashes to FILE.input.json.
 * Human output: the snippet's stdout and stderr, then the result (JSON) on its own line.
 */

import { readFileSync, writeFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { createEngine } from '../../engine/index.ts';
import { SandboxError, exitCodeFor } from '../../errors.ts';
import { UsageError, parse, printJson, str } from './args.ts';
import { limitFlags } from './units.ts';
import { cliCall } from './live.ts';
import { exceptionWhere } from '../exception-text.ts';

export async function execCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, {
    lang: { type: 'string' },
    command: { type: 'string', short: 'c' },
    profile: { type: 'string' },
    timeout: { type: 'string' },
    fuel: { type: 'string' },
    memory: { type: 'string' },
    context: { type: 'string' },
    tenant: { type: 'string' },
    vfs: { type: 'string' },
    receipt: { type: 'string' },
    json: { type: 'boolean' },
  });
  const language = str(values['lang']);
  if (!language) throw new UsageError('exec needs --lang js|ts|python');
  // One snippet in a one-shot process: a big interpreter or compiler module (CPython, clang) is
  // done before V8's optimizing tier would pay for its recompiles (a first CPython call 2.7 →
  // 1.7 s here; the build command's header has clang's numbers). Set before any wasm compiles.
  if (language === 'c' || language === 'cpp' || language === 'python') setFlagsFromString('--liftoff-only');
  const inline = str(values['command']);
  if ((inline === undefined) === (positionals.length === 0) || positionals.length > 1) throw new UsageError("exec takes -c 'CODE' or one FILE");
  let code: string;
  if (inline !== undefined) code = inline;
  else {
    try {
      code = readFileSync(positionals[0]!, 'utf8');
    } catch {
      throw new SandboxError('POLICY_INVALID', `cannot read "${positionals[0]!}"`);
    }
  }
  let context: unknown;
  const rawContext = str(values['context']);
  if (rawContext !== undefined) {
    try {
      context = JSON.parse(rawContext);
    } catch {
      throw new UsageError('--context expects JSON');
    }
  }
  const json = values['json'] === true;
  const receiptFile = str(values['receipt']);
  const limits = limitFlags(values);
  const engine = createEngine({ poolSize: 0 });
  const live = cliCall(json);
  try {
    const r = await engine.exec({
      language,
      code,
      ...(context !== undefined ? { context } : {}),
      ...(str(values['profile']) !== undefined ? { profile: str(values['profile'])! } : {}),
      ...(str(values['tenant']) !== undefined ? { tenant: str(values['tenant'])! } : {}),
      ...(str(values['vfs']) !== undefined ? { vfs: str(values['vfs'])! } : {}),
      ...limits,
      ...(receiptFile !== undefined ? { receipt: true } : {}),
      // Starting an interpreter can take a moment (Python: a second or two cold): say so.
      onProgress: json ? undefined : (what: string) => process.stderr.write(`membrane: ${what}\n`),
      ...live.controls,
    });
    live.finish(r);
    if (receiptFile !== undefined && r.receipt) {
      // The receipt, and the input it hashes beside it (membrane replay --input).
      writeFileSync(receiptFile, `${JSON.stringify(r.receipt, null, 2)}\n`);
      writeFileSync(`${receiptFile}.input.json`, `${JSON.stringify(context === undefined ? {} : { context }, null, 2)}\n`);
    }
    if (json) printJson(r);
    else {
      for (const w of r.warnings) process.stderr.write(`membrane: warning: ${w}\n`);
      if (r.ok && r.result !== undefined) process.stdout.write(`${JSON.stringify(r.result)}\n`);
      if (!r.ok && r.error) process.stderr.write(`membrane: ${r.error.code}: ${r.error.message}${exceptionWhere(r.error.details)}\n`);
    }
    return r.ok ? 0 : exitCodeFor(r.error?.code as Parameters<typeof exitCodeFor>[0]);
  } finally {
    live.finish({ stdout: '', stderr: '' });
    await engine.close();
  }
}
