/**
 * The `membrane` command: dispatch to subcommands; errors become the fixed exit-code table.
 * `--help`/`-h` (anywhere before `--`) prints the command's usage and exits 0; `--version`/`-V`
 * prints the version. A finished command's process never lingers: a handle a command failed to
 * release cannot keep it past EXIT_BACKSTOP_MS. A subcommand's module loads only when that
 * command runs, so one command's start never pays for another's dependencies.
 */

import { reportError, USAGE_EXIT } from './args.ts';
import { COMMAND_HELP, commandHelp, helpText, version } from './help.ts';

type Command = (argv: string[]) => Promise<number>;

// Each command's module is imported when that command is dispatched, so a command never
// evaluates another's code (nor, in the bundle, its npm packages: `membrane build` loads no
// MCP SDK, zod, pino or prom-client).
const COMMANDS: Record<string, () => Promise<Command>> = {
  run: async () => (await import('./run.ts')).runCommand,
  exec: async () => (await import('./exec.ts')).execCommand,
  build: async () => (await import('./build.ts')).buildCommand,
  inspect: async () => (await import('./inspect.ts')).inspectCommand,
  profiles: async () => (await import('./profiles.ts')).profilesCommand,
  instrument: async () => (await import('./instrument.ts')).instrumentCommand,
  sh: async () => (await import('./sh.ts')).shCommand,
  audit: async () => (await import('./audit.ts')).auditCommand,
  serve: async () => (await import('./serve.ts')).serveCommand,
  mcp: async () => (await import('./mcp.ts')).mcpCommand,
  token: async () => (await import('./token.ts')).tokenCommand,
  agent: async () => (await import('./agent.ts')).agentCommand,
  identity: async () => (await import('./identity.ts')).identityCommand,
  sign: async () => (await import('./sign.ts')).signCommand,
  'verify-artifact': async () => (await import('./sign.ts')).verifyArtifactCommand,
  receipt: async () => (await import('./receipt.ts')).receiptCommand,
  replay: async () => (await import('./receipt.ts')).replayCommand,
  bundle: async () => (await import('./bundle.ts')).bundleCommand,
  verify: async () => (await import('./verify.ts')).verifyCommand,
  worker: async () => (await import('./worker.ts')).workerCommand,
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
  const load = COMMANDS[cmd];
  if (!load) return unknownCommand(cmd);
  if (wantsHelp(rest)) {
    process.stdout.write(commandHelp(cmd));
    return 0;
  }
  try {
    return await (await load())(rest);
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
