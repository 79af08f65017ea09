/**
 * `membrane mcp [--profile P] [--tenant T] [--config FILE]`: an MCP server on stdio
 * (src/interfaces/mcp) whose grant is the profile given here — default `compute`, or the config
 * file's `profile`; `--profile` wins over the file.
 *
 * stdout carries only the protocol; every log line (pino JSON) goes to stderr. The process ends
 * when stdin ends or on SIGTERM/SIGINT: in-flight calls finish (each bounded by its timeout),
 * then the engine closes; a second signal exits at once.
 */

import { checkName } from '../../policy/names.ts';
import { createEngine } from '../../engine/index.ts';
import { CommandRegistry } from '../../engine/registry.ts';
import { isProfileName, PROFILE_NAMES, type ProfileName } from '../../policy/profiles.ts';
import { engineOptionsFrom, loadConfig } from '../config.ts';
import { createLogger } from '../http/log.ts';
import { serveStdio } from '../mcp/stdio.ts';
import { UsageError, parse, str } from './args.ts';

export async function mcpCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { profile: { type: 'string' }, tenant: { type: 'string' }, config: { type: 'string' } });
  if (positionals.length > 0) throw new UsageError('mcp takes no arguments (it speaks MCP on stdin/stdout)');
  const configFile = str(values['config']);
  const config = configFile ? loadConfig(configFile) : null;
  const wanted = str(values['profile']) ?? config?.profile ?? 'compute';
  if (!isProfileName(wanted)) throw new UsageError(`--profile must be one of ${PROFILE_NAMES.join(', ')}`);
  const profile: ProfileName = wanted;
  const tenant = checkName('tenant', str(values['tenant']) ?? 'mcp');
  const log = createLogger();
  const commands = CommandRegistry.withBuiltins();
  const engine = createEngine({ ...engineOptionsFrom(config), commands, poolSize: 1 });
  const session = await serveStdio({ engine, tenant, profile, commands, log });
  log.info({ profile, tenant, ...(configFile ? { config: configFile.split('/').pop() } : {}) }, 'membrane mcp: serving MCP on stdio');
  let signalled = false;
  const stop = (): void => {
    if (signalled) process.exit(130);
    signalled = true;
    void session.close();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  try {
    await session.done;
  } finally {
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
    await engine.close();
    log.info({}, 'membrane mcp: stopped');
  }
  return 0;
}
