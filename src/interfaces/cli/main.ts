/**
 * The `membrane` command: dispatch to subcommands; errors become the fixed exit-code table.
 */

import { ERROR_CODES, ERROR_TABLE } from '../../errors.ts';
import { reportError, USAGE_EXIT } from './args.ts';
import { auditCommand, TAMPERED_EXIT } from './audit.ts';
import { execCommand } from './exec.ts';
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
  inspect: inspectCommand,
  profiles: profilesCommand,
  instrument: instrumentCommand,
  sh: shCommand,
  audit: auditCommand,
  serve: serveCommand,
  mcp: mcpCommand,
  token: tokenCommand,
};

export function helpText(): string {
  const codes = ERROR_CODES.map((c) => `  ${String(ERROR_TABLE[c].exitCode).padStart(3)}  ${c.padEnd(17)} ${ERROR_TABLE[c].message}`).join('\n');
  return `membrane — a capability-secure WebAssembly sandbox

Usage:
  membrane run MODULE.wasm|.wat [--profile P] [--timeout MS] [--fuel N | --no-fuel] [--memory BYTES]
               [--invoke EXPORT [--arg V]...] [--stdin FILE] [--env K=V]... [--tenant T]
               [--mount HOSTDIR:/guest[:ro]]... [--register NAME=FILE.wasm]... [--secrets-file F]
               [--allow-cidr CIDR]...
               [--caps W,W] [--vfs NAME] [--strict-profiles] [--json] [-- ARGS...]
      Run _start (a WASI command) or the named export in a fresh sandbox. --register adds a
      command the guest may run (commands/exec caps) besides the built-in set. Secrets for
      secret_sign come from MEMBRANE_SECRET_<NAME> variables and --secrets-file (JSON).
      --allow-cidr admits an address range the network guard refuses by default (e.g. a
      service on 127.0.0.1/32); nothing private is reachable without it.
  membrane exec --lang js|ts|python (-c CODE | FILE) [--profile P] [--timeout MS] [--fuel N]
               [--memory BYTES] [--context JSON] [--tenant T] [--vfs NAME] [--json]
      Run untrusted source in a fresh interpreter: JavaScript/TypeScript in fuel-metered QuickJS,
      Python in hardened Pyodide in a child process. Prints stdout/stderr, then the value of the
      last expression as JSON. --vfs NAME: the snippet's vfs/commands powers use that persistent
      VFS (as run --vfs NAME) instead of a private one removed after the call.
  membrane inspect MODULE [--json]
      Imports, exports, memory, the caps the module needs and the least-privileged profiles.
  membrane profiles [--json]
      The four profiles: memory, timeout, fuel and cap words.
  membrane sh -c 'SCRIPT' [--vfs NAME] [--register NAME=FILE.wasm]... [--profile P] [--timeout MS] [--json]
      The in-sandbox shell: pipes, ; && ||, variables, quoting, < > >> into the VFS; every
      command is a registered wasm guest (echo cat wc head tail grep sort uniq tr ls mkdir rm cp
      mv sha256sum base64 seq, plus --register'ed ones). An unknown command exits 127.
      --timeout MS is the whole script's budget (default: the profile's time per call); a
      script stopped by a wall (time, 1 MiB of variables, a 1 MiB argv, output with
      failOnOutputLimit) exits with that error's code, e.g. 68 for TIMEOUT (docs/shell.md).
  membrane instrument IN.wasm -o OUT.wasm [--json]
      Write the fuel-metered module the engine would run (sizes, functions, loops, time).
  membrane audit verify [--checkpoint FILE] [--json]
      Check the audit log's HMAC chain in $MEMBRANE_HOME/engine.sqlite: "ok: N records", or
      "tampered at seq S: REASON" and exit ${TAMPERED_EXIT} — an emptied (wiped) or dropped log too.
      --checkpoint: also fail if the log no longer holds the checkpointed record (tail cut,
      head rolled back, log restored or restarted). The key is $MEMBRANE_AUDIT_KEY (64 hex
      digits or base64 of 32 bytes) or $MEMBRANE_HOME/audit.key (mode 0600, created on first use).
  membrane audit checkpoint [--json]
      Print a signed checkpoint {v, alg, keyId, seq, mac, time, sig} of the log's head (one JSON
      line) to keep elsewhere; exit ${TAMPERED_EXIT} without one if the log does not verify.
  membrane audit tail [--tenant T] [--kind K] [--limit N] [--json]
      The newest N (default 20) audit records, oldest first; JSON lines with --json.
  membrane serve [--port N (default 7070; 0 = any free)] [--host 127.0.0.1] [--config FILE] [--json]
      The HTTP API (docs/http-api.md), MCP at /mcp and the dashboard at /. Prints
      "membrane serve: listening on http://HOST:PORT" first, then JSON log lines on stderr;
      SIGTERM/SIGINT drain in-flight requests and exit. --config: JSON or TOML operator settings.
  membrane token create --tenant T [--profile P (default compute)] [--json]
  membrane token list [--json] | membrane token revoke ID
      Bearer tokens for serve, stored as SHA-256 hashes in $MEMBRANE_HOME/tokens.sqlite; a new
      token (mbt_…) is printed once.
  membrane mcp [--profile P (default compute)] [--tenant T (default mcp)] [--config FILE]
      An MCP server on stdin/stdout (docs/mcp.md): tools sandbox_execute, run_wasm and
      list_profiles under the grant P (a call may narrow it, never widen it). Logs on stderr.

Exit codes:
    0  success (run: a WASI guest's own exit status is passed through)
    ${TAMPERED_EXIT}  audit verify/checkpoint: the audit log was tampered with (or misses the checkpoint)
    ${USAGE_EXIT}  usage error
${codes}
`;
}

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === '--help' || cmd === '-h' || cmd === 'help') {
    process.stdout.write(helpText());
    return cmd ? 0 : USAGE_EXIT;
  }
  const fn = COMMANDS[cmd];
  if (!fn) {
    process.stderr.write(`membrane: unknown command "${cmd}"\n${helpText()}`);
    return USAGE_EXIT;
  }
  try {
    return await fn(rest);
  } catch (e) {
    return reportError(e);
  }
}

process.exitCode = await main(process.argv.slice(2));
