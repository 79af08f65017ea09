/**
 * `membrane build SRC... -o OUT.wasm [--lang c|c++] [-O LEVEL] [--profile P] [--timeout D]
 * [--fuel N] [--memory S] [--json] [-- CLANG_FLAGS...]`: compile and link C/C++ inside the sandbox
 * (src/build/build.ts). Sources keep the relative names they were given (so diagnostics read
 * `hello.c:3:5`); an absolute or `..` path is known by its base name. Human output: the
 * compiler's messages on stderr, then what was written; `--json` prints the result (the module's
 * size and path instead of its bytes) and writes the file too.
 */

import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { createEngine } from '../../engine/index.ts';
import { SandboxError, exitCodeFor } from '../../errors.ts';
import { UsageError, parse, printJson, str } from './args.ts';
import { limitFlags } from './units.ts';
import { cliCall } from './live.ts';

const RELATIVE = /^(?!\/)(?!.*(?:^|\/)\.\.?(?:\/|$))[A-Za-z0-9._+\-/]+$/;
const LEVELS = new Set(['0', '1', '2', '3', 's', 'z']);

export async function buildCommand(argv: string[]): Promise<number> {
  // This process only runs clang and wasm-ld, briefly: V8's optimizing tier would spend the two
  // cores recompiling clang's huge functions for a run that ends first. Baseline code only halves
  // a fresh build (hello.c 3.3 → 2.6 s, a 2 000-line file 11.9 → 5.7 s; bench/build.ts). Set before
  // any wasm is compiled; V8's flags are per process, so only this command sets it.
  setFlagsFromString('--liftoff-only');
  const { values, positionals, rest } = parse(argv, {
    output: { type: 'string', short: 'o' },
    lang: { type: 'string' },
    O: { type: 'string', short: 'O' },
    profile: { type: 'string' },
    timeout: { type: 'string' },
    fuel: { type: 'string' },
    memory: { type: 'string' },
    tenant: { type: 'string' },
    json: { type: 'boolean' },
  });
  const output = str(values['output']);
  if (!output) throw new UsageError('build needs -o OUT.wasm');
  if (positionals.length === 0) throw new UsageError('build needs at least one source file');
  const level = str(values['O']) ?? '2';
  if (!LEVELS.has(level)) throw new UsageError('-O takes 0, 1, 2, 3, s or z');
  const lang = str(values['lang']);
  if (lang !== undefined && lang !== 'c' && lang !== 'c++' && lang !== 'cpp') throw new UsageError('--lang is c or c++');
  const sources: Record<string, Uint8Array> = {};
  for (const path of positionals) {
    const name = RELATIVE.test(path) ? path : basename(path);
    if (Object.hasOwn(sources, name)) throw new UsageError(`two sources are both named ${name}`);
    try {
      sources[name] = new Uint8Array(readFileSync(path));
    } catch {
      throw new SandboxError('POLICY_INVALID', `cannot read "${path}"`);
    }
  }
  const json = values['json'] === true;
  const engine = createEngine({ poolSize: 0 });
  const live = cliCall(json);
  try {
    const r = await engine.build({
      sources,
      ...(lang !== undefined ? { language: lang === 'cpp' ? 'c++' : lang } : {}),
      optimize: (/^\d$/.test(level) ? Number(level) : level) as 0 | 1 | 2 | 3 | 's' | 'z',
      args: rest,
      ...(str(values['profile']) !== undefined ? { profile: str(values['profile'])! } : {}),
      ...(str(values['tenant']) !== undefined ? { tenant: str(values['tenant'])! } : {}),
      ...limitFlags(values),
      ...live.controls,
    });
    live.finish({ stdout: r.stdout, stderr: r.stderr });
    if (r.ok && r.wasm) writeFileSync(output, r.wasm);
    if (json) {
      const { wasm, ...rest } = r;
      printJson({ ...rest, ...(wasm ? { output, wasmBytes: wasm.length } : {}) });
    } else {
      for (const w of r.warnings) process.stderr.write(`membrane: warning: ${w}\n`);
      if (r.ok && r.wasm) process.stderr.write(`membrane: wrote ${output} (${r.wasm.length} bytes; ${r.steps.length} steps, ${r.fuelUsed} fuel, ${Math.round(r.durationMs)} ms)\n`);
      else if (r.error) process.stderr.write(`membrane: ${r.error.code}: ${r.error.message}\n`);
    }
    return r.ok ? 0 : exitCodeFor(r.error?.code as Parameters<typeof exitCodeFor>[0]);
  } finally {
    live.finish({ stdout: '', stderr: '' });
    await engine.close();
  }
}
