/**
 * `membrane sh -c 'SCRIPT' [--vfs NAME] [--register NAME=FILE.wasm]... [--profile P] [--timeout DURATION] [--json]`:
 * the in-sandbox shell (src/shell, docs/shell.md). `--timeout` is the whole script's budget. Exits
 * with the script's status, or with the error table's code when a wall stopped the script.
 */

import { createEngine } from '../../engine/index.ts';
import { exitCodeFor } from '../../errors.ts';
import { ShellSyntaxError, parse as parseScript, runShell } from '../../shell/index.ts';
import { UsageError, commandRegistry, parse, printJson, str, strs } from './args.ts';
import { optional } from './units.ts';

export async function shCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, {
    command: { type: 'string', short: 'c' },
    vfs: { type: 'string' },
    register: { type: 'string', multiple: true },
    toolkit: { type: 'string', multiple: true },
    profile: { type: 'string' },
    timeout: { type: 'string' },
    json: { type: 'boolean' },
  });
  const script = str(values['command']);
  if (script === undefined || positionals.length > 0) throw new UsageError("sh takes -c 'SCRIPT'");
  try {
    parseScript(script);
  } catch (e) {
    if (e instanceof ShellSyntaxError) {
      process.stderr.write(`membrane sh: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const timeoutMs = optional('timeout', values['timeout'], 'duration');
  const registry = await commandRegistry(strs(values['register']), strs(values['toolkit']));
  const engine = createEngine({ poolSize: 1, commands: registry });
  try {
    const r = await runShell(engine, registry, script, {
      ...(str(values['vfs']) !== undefined ? { vfs: str(values['vfs'])! } : {}),
      ...(str(values['profile']) !== undefined ? { profile: str(values['profile'])! } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    });
    if (values['json'] === true) printJson(r);
    else {
      process.stdout.write(r.stdout);
      process.stderr.write(r.stderr);
    }
    return r.error ? exitCodeFor(r.error.code) : r.exitCode;
  } finally {
    await engine.close();
  }
}
