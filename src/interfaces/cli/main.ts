/**
 * The `membrane` command: dispatch to subcommands; errors become the fixed exit-code table.
 * `--help`/`-h` (anywhere before `--`) prints the command's usage and exits 0; `--version`/`-V`
 * prints the version. A finished command's process never lingers: a handle a command failed to
 * release cannot keep it past EXIT_BACKSTOP_MS.
 */

import { reportError, USAGE_EXIT } from './args.ts';
import { auditCommand } from './audit.ts';
import { COMMAND_HELP, commandHelp, helpText, version } from './help.ts';
import { execCommand } from './exec.ts';
import { buildCommand } from './build.ts';
import { inspectCommand } from './inspect.ts';
import { instrumentCommand } from './instrument.ts';
import { shCommand } from './sh.ts';
import { profilesCommand } from './profiles.ts';
import { runCommand } from './run.ts';
import { mcpCommand } from './mcp.ts';
import { serveCommand } from './serve.ts';
import { tokenCommand } from './token.ts';

const COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  run: runCommand,
  exec: execCommand,
  build: buildCommand,
  inspect: inspectCommand,
  profiles: profilesCommand,
  instrument: instrumentCommand,
  sh: shCommand,
  audit: auditCommand,
  serve: serveCommand,
  mcp: mcpCommand,
  token: tokenCommand,
};

/** How long a finished command's process may linger on a leaked handle before it exits anyway. */
const EXIT_BACKSTOP_MS = 3000;

const wantsHelp = (args: readonly string[]): boolean => {
  const cut = args.indexOf('--');
  return (cut >= 0 ? args.slice(0, cut) : args).some((a) => a === '--help' || a === '-h');
};

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd) {
    process.stderr.write(helpText());
    return USAGE_EXIT;
  }
  if (cmd === '--help' || cmd === '-h') {
    process.stdout.write(helpText());
    return 0;
  }
  if (cmd === 'help') {
    const topic = rest[0];
    if (topic !== undefined && !(topic in COMMAND_HELP)) return unknownCommand(topic);
    process.stdout.write(topic === undefined ? helpText() : commandHelp(topic));
    return 0;
  }
  if (cmd === '--version' || cmd === '-V') {
    process.stdout.write(`membrane ${version()}\n`);
    return 0;
  }
  const fn = COMMANDS[cmd];
  if (!fn) return unknownCommand(cmd);
  if (wantsHelp(rest)) {
    process.stdout.write(commandHelp(cmd));
    return 0;
  }
  try {
    return await fn(rest);
  } catch (e) {
    return reportError(e, cmd);
  }
}

function unknownCommand(cmd: string): number {
  const shown = JSON.stringify(cmd.length > 40 ? `${cmd.slice(0, 40)}…` : cmd);
  process.stderr.write(cmd.startsWith('-') ? `membrane: unknown option ${shown}\nTry 'membrane --help'.\n` : `membrane: unknown command ${shown}\nTry 'membrane --help'.\n`);
  return USAGE_EXIT;
}

const code = await main(process.argv.slice(2));
process.exitCode = code;
setTimeout(() => process.exit(code), EXIT_BACKSTOP_MS).unref();
