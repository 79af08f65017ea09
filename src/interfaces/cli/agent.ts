/**
 * `membrane agent run --task TEXT [--system FILE] [--def FILE] [--profile P] [--vfs NAME]
 * [--max-steps N] [--tool-timeout DURATION] [--tenant T] [--config FILE] [--json]` and
 * `membrane agent resume ID [--vfs NAME] [--max-steps N] [--json]`: the agent loop (src/agent)
 * from the command line. The model endpoint comes from the config's `llm` section or
 * MEMBRANE_LLM_URL / MEMBRANE_LLM_MODEL; the key only from MEMBRANE_LLM_KEY.
 * Human output: one line per step as it happens, then the result; `--json` prints the run's
 * result object. Exit: 0 when the model finished or called done, 1 at max steps or when stopped,
 * else the error's code from the table.
 */

import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { createEngine } from '../../engine/index.ts';
import { SandboxError, exitCodeFor, type ErrorCode } from '../../errors.ts';
import { parseDefinition, type AgentDefinition, type AgentEvent, type AgentResult } from '../../agent/index.ts';
import { UsageError, parse, printJson, str } from './args.ts';
import { count, duration } from './units.ts';

function readText(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    throw new SandboxError('POLICY_INVALID', `cannot read the ${what} file "${basename(file)}"`);
  }
}

function printStep(e: AgentEvent): void {
  if (e.kind === 'model') {
    if (e.content) process.stdout.write(`model   ${e.turn}: ${e.content.replace(/\s+/g, ' ').slice(0, 200)}\n`);
  } else if (e.kind === 'step') {
    const what = e.preview.replace(/\s+/g, ' ').slice(0, 120);
    process.stdout.write(`step    ${e.turn}.${e.index} ${e.tool} ${e.outcome}${e.code ? ` ${e.code}` : ''} ${e.durationMs}ms${what ? ` — ${what}` : ''}\n`);
  }
}

function report(r: AgentResult, json: boolean): number {
  if (json) printJson(r);
  else {
    process.stdout.write(`outcome ${r.outcome} after ${r.steps} turn${r.steps === 1 ? '' : 's'} (${r.usage.totalTokens} tokens; session ${r.id}, vfs ${r.vfs})\n`);
    if (r.result !== null) process.stdout.write(`result  ${r.result}\n`);
    if (r.error) process.stderr.write(`membrane: ${r.error.code}: ${r.error.message}\n`);
  }
  if (r.outcome === 'done' || r.outcome === 'finished') return 0;
  if (r.outcome === 'error') return exitCodeFor((r.error?.code ?? 'INTERNAL') as ErrorCode);
  return 1;
}

export async function agentCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== 'run' && sub !== 'resume') throw new UsageError('agent takes run or resume');
  const { values, positionals } = parse(rest, {
    task: { type: 'string' },
    system: { type: 'string' },
    def: { type: 'string' },
    profile: { type: 'string' },
    vfs: { type: 'string' },
    'max-steps': { type: 'string' },
    'tool-timeout': { type: 'string' },
    tenant: { type: 'string' },
    config: { type: 'string' },
    json: { type: 'boolean' },
  });
  const json = values['json'] === true;
  const maxSteps = values['max-steps'] !== undefined ? count('--max-steps', values['max-steps'], { min: 1, max: 1000 }) : undefined;
  const toolTimeoutMs = values['tool-timeout'] !== undefined ? duration('--tool-timeout', values['tool-timeout'], { min: 1 }) : undefined;
  const tenant = str(values['tenant']);
  const vfs = str(values['vfs']);
  const configFile = str(values['config']);
  // zod and the config schema load only here, when an agent command runs.
  const { engineOptionsFrom, loadConfig } = await import('../config.ts');
  const config = configFile ? loadConfig(configFile) : null;
  const engine = createEngine({ ...engineOptionsFrom(config), poolSize: 0 });
  const stop = new AbortController();
  const onSigint = (): void => stop.abort();
  process.once('SIGINT', onSigint);
  try {
    if (sub === 'resume') {
      if (positionals.length !== 1) throw new UsageError('agent resume takes one session ID');
      const r = await engine.agent.resume(positionals[0]!, { ...(tenant ? { tenant } : {}), ...(vfs ? { vfs } : {}), ...(maxSteps ? { maxSteps } : {}), signal: stop.signal, ...(json ? {} : { onStep: printStep }) });
      return report(r, json);
    }
    if (positionals.length) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    const task = str(values['task']);
    if (!task) throw new UsageError('agent run needs --task TEXT');
    const defFile = str(values['def']);
    const systemFile = str(values['system']);
    const def: AgentDefinition | null = defFile ? parseDefinition(readText(defFile, 'agent definition'), basename(defFile)) : null;
    const prompt = systemFile ? readText(systemFile, 'system prompt').trim() : null;
    if (!def && !prompt) throw new UsageError('agent run needs a system prompt: --system FILE or --def FILE');
    const system = prompt ?? def!.system;
    const profile = str(values['profile']) ?? def?.profile ?? config?.profile;
    const r = await engine.agent.run({
      system,
      task,
      ...(def?.model ? { model: def.model } : {}),
      ...(def?.toolkits.length ? { toolkits: def.toolkits } : {}),
      ...(profile ? { profile } : {}),
      ...(tenant ? { tenant } : {}),
      ...(vfs ? { vfs } : {}),
      ...(maxSteps ? { maxSteps } : {}),
      ...(toolTimeoutMs ? { toolTimeoutMs } : {}),
      signal: stop.signal,
      ...(json ? {} : { onStep: printStep }),
    });
    return report(r, json);
  } finally {
    process.removeListener('SIGINT', onSigint);
    await engine.close();
  }
}
