/**
 * The CLI's help texts: `membrane --help` (every command, the unit forms, the exit codes) and
 * `membrane CMD --help` (one command's flags with defaults, units and an example), and the
 * version `membrane --version` prints (src/interfaces/version.ts).
 *
 * Invariant: every command `main.ts` dispatches has an entry here (test/cli/help-version checks).
 */

import { ERROR_CODES, ERROR_TABLE } from '../../errors.ts';
import { MAX_AUDIT_TAIL } from '../../storage/audit.ts';
import { TAMPERED_EXIT } from './audit.ts';
import { version } from '../version.ts';
import { BIND_FAILED_EXIT, USAGE_EXIT } from './usage.ts';

export { version };

const UNITS = `Numbers:
  durations  800 (ms), 800ms, 5s, 2m, 1h; 1 ms to 2147483647 ms (~24.8 days)
  sizes      65536 (bytes), 64KiB, 64MiB, 1GiB, SI 64MB; a whole number of bytes
  counts     1000000, 1_000_000, 1e6; whole numbers up to 2^53 - 1
  A value in another form, negative, fractional where a whole number is due, or out of range is a
  usage error (exit ${USAGE_EXIT}) naming the flag. A limit above the profile's is clamped with a warning.`;

const LIMITS = `  --profile P        compute (default), minimal, network or posix (membrane profiles)
  --timeout DURATION wall-clock budget (default: the profile's, e.g. 5s for compute)
  --fuel COUNT       work budget in fuel units (default: the profile's, e.g. 1e9 for compute)
  --memory SIZE      memory cap, at least 64KiB (default: the profile's, e.g. 64MiB for compute)`;

export const COMMAND_HELP: Readonly<Record<string, string>> = {
  run: `Usage: membrane run MODULE.wasm|.wat [flags] [-- ARGS...]

Run _start (a WASI command) or the export named by --invoke once, in a fresh sandbox. A module
written by 'membrane instrument' runs too: its metering is stripped and re-applied, so it is
metered exactly once, against this run's budget. A WebAssembly component runs its wasi:cli/run
export, its imports checked against the membrane:engine world first (docs/components.md).

${LIMITS}
  --no-fuel          run unmetered (the deadline still holds)
  --invoke EXPORT    call this export instead of _start; --arg V (repeatable) are its arguments
  --stdin FILE       the guest's stdin
  --env K=V          a guest environment variable (repeatable; none by default)
  --mount HOSTDIR:/guest[:ro]   copy a host directory in; changes are written back unless :ro
  --vfs NAME         keep the guest's filesystem in $MEMBRANE_HOME/vfs/NAME.sqlite
  --tenant T         the tenant recorded in the audit log (default: default)
  --caps W,W         narrow the profile's cap words
  --register NAME=FILE.wasm     a command the guest may run (repeatable)
  --toolkit MANIFEST            install a toolkit's commands under its declared caps (repeatable)
  --secrets-file F   JSON secrets for secret_sign (also MEMBRANE_SECRET_<NAME> variables)
  --allow-cidr CIDR  admit an address range the network guard refuses (repeatable)
  --strict-profiles  an unknown --profile is an error instead of a warning
  --receipt FILE     write a receipt of the run signed by the engine's key to FILE, and its input to
                     FILE.input.json (membrane receipt verify, membrane replay)
  --require-signed DID  run only a module signed by this did:key or did:web:HOST (repeatable); give
                     its manifest with --artifact FILE (membrane sign): otherwise NOT_CAPABLE, audited
  --did-doc FILE     a did:web signer's DID document (membrane identity did-web), never fetched
  --did-web-fetch    fetch a trusted did:web signer's https://HOST/.well-known/did.json through the
                     network guard when no --did-doc gives it (--allow-cidr applies)
  --json             print one result object { ok, result?, exitCode?, stdout, stderr, fuelUsed,
                     durationMs, memoryBytes, profile, warnings, error? }

Exit: the guest's own exit status, 0 on success, or the error's code (membrane --help).

Example:
  membrane run spin.wat --invoke run --profile network --timeout 800ms --json`,

  exec: `Usage: membrane exec --lang js|ts|python|c|cpp (-c CODE | FILE) [flags]

Run untrusted source in a fresh interpreter: JavaScript/TypeScript in fuel-metered QuickJS, Python
in CPython 3.12 on WASI (a plain guest, no JS bridge). Prints stdout/stderr, then the last expression's value as JSON.
C and C++ are compiled inside the sandbox (membrane build) and run as a WASI guest: one deadline and
one fuel budget cover both steps; the result is the exit status; --context arrives as stdin (JSON).

  --lang L           js, ts, python, c or cpp (required)
  -c, --command CODE the snippet (or give one FILE)
${LIMITS}
  --context JSON     a read-only value named context
  --tenant T         the tenant recorded in the audit log (default: default)
  --vfs NAME         the snippet's vfs/commands powers use this persistent VFS
  --receipt FILE     (js, ts, python) write a receipt signed by the engine's key to FILE, and the
                     context it hashes to FILE.input.json (membrane receipt verify, membrane replay)
  --json             print one result object

Example:
  membrane exec --lang python -c 'sum(range(10))' --timeout 10s --memory 256MiB`,

  inspect: `Usage: membrane inspect MODULE.wasm|.wat [--json]

Imports, exports, memory, the cap words the module needs and the least-privileged profiles that
can run it (or why none can). For a WebAssembly component: its interface imports, the cap each
needs in the membrane:engine world, and the profiles whose world holds them (docs/components.md).

  --json             print the inspection as JSON

Example:
  membrane inspect guest.wasm`,

  profiles: `Usage: membrane profiles [--json]

The four profiles: memory, timeout, fuel, HTTP and cap words.

  --json             print them as JSON

Example:
  membrane profiles --json`,

  instrument: `Usage: membrane instrument IN.wasm|.wat -o OUT.wasm [--json]

Write the fuel-metered module the engine would run (sizes, functions, loops, time). The output is
for inspection and for shipping: 'membrane run OUT.wasm' runs it, metered once against that run's
fuel (a module cannot bring its own budget).

  -o, --output FILE  where to write the metered module (required)
  --json             print the statistics as JSON

Example:
  membrane instrument guest.wasm -o guest.metered.wasm`,

  build: `Usage: membrane build SRC... -o OUT.wasm [flags] [-- CLANG_FLAGS...]

Compile and link C or C++ inside the sandbox: clang and wasm-ld (LLVM from @yowasp/clang) run as
fuel-metered WASI guests on a private VFS holding the sources, with the WASI sysroot mounted
read-only; untrusted source never reaches a native compiler. The output is a WASI command
(membrane run OUT.wasm). One deadline and one fuel budget cover every compile and the link.

  -o, --output FILE  where to write the module (required)
  --lang L           c or c++ (default: c++ when a source is .cc/.cpp/.cxx, else c)
  -O LEVEL           0, 1, 2 (default), 3, s or z
  --profile P        whose limits the build runs under (default posix: 256MiB, 60s, 1e10 fuel);
                     the tools get the vfs cap only, whatever the profile grants
${LIMITS}
  --tenant T         the tenant recorded in the audit log (default: default)
  --json             print one result object (diagnostics, steps, fuelUsed, wasmBytes)

Sources keep their relative names (diagnostics read hello.c:3:5); headers (.h, .hpp) may be given
too. Flags after -- go to every compile and the link (e.g. -- -Wall -DNDEBUG -Iinclude).

Example:
  membrane build hello.c -o hello.wasm && membrane run hello.wasm
`,

  sh: `Usage: membrane sh -c 'SCRIPT' [flags]

The in-sandbox shell: pipes, ; && ||, variables, quoting, < > >> into the VFS; every command is a
registered wasm guest. An unknown command exits 127; a script stopped by a wall exits with that
error's code (e.g. ${ERROR_TABLE.TIMEOUT.exitCode} for TIMEOUT).

  -c, --command SCRIPT          the script (required)
  --profile P                   the profile each command runs under (default compute)
  --timeout DURATION            the whole script's budget (default: the profile's time per call)
  --vfs NAME                    a persistent VFS in $MEMBRANE_HOME/vfs/NAME.sqlite
  --register NAME=FILE.wasm     add a command (repeatable)
  --toolkit MANIFEST            install a toolkit's commands under its declared caps (repeatable)
  --json                        print { stdout, stderr, exitCode, error? }

Example:
  membrane sh -c 'seq 1 100 | grep 7 | wc -l' --timeout 10s`,

  audit: `Usage: membrane audit verify [--checkpoint FILE] [--json] [--offline]
       membrane audit checkpoint [--json] [--signed]
       membrane audit tail [--tenant T] [--kind K] [--limit COUNT] [--json]

verify      check the audit log's HMAC chain in $MEMBRANE_HOME/engine.sqlite: "ok: N records", or
            "tampered at seq S: REASON" and exit ${TAMPERED_EXIT} (a wiped or dropped log too). --checkpoint:
            also fail if the log no longer holds the checkpointed record.
checkpoint  print a signed checkpoint of the log's head (one JSON line) to keep elsewhere;
            exit ${TAMPERED_EXIT} without one if the log does not verify. --signed: also signed with the
            engine's Ed25519 key ({checkpoint, signer, signature}), which anyone can check:
            verify --checkpoint FILE --offline needs neither the audit key nor the log.
tail        the newest records, oldest first; --limit 1..${MAX_AUDIT_TAIL} (default 20).

The key is $MEMBRANE_AUDIT_KEY (64 hex digits or base64 of 32 bytes) or $MEMBRANE_HOME/audit.key.

Example:
  membrane audit tail --tenant alice --limit 50`,

  serve: `Usage: membrane serve [--port N] [--host H] [--config FILE] [--log-level L] [--json]

The HTTP API (docs/http-api.md), MCP at /mcp and the dashboard at /. Prints
"membrane serve: listening on http://HOST:PORT" first, then JSON log lines on stderr;
SIGTERM/SIGINT drain in-flight requests and exit.

  --port N           0..65535 (default 7070; 0 = any free port)
  --host H           the address to listen on (default 127.0.0.1)
  --config FILE      JSON or TOML operator settings
  --log-level L      trace, debug, info, warn, error or silent (default info, or the
                     config's server.logLevel)
  --json             print the first line as {"listening": URL}

Exit: ${BIND_FAILED_EXIT} at once when the address cannot be bound ("address 127.0.0.1:7070 is in use",
not permitted, not available on this host).

Example:
  membrane serve --port 8080`,

  mcp: `Usage: membrane mcp [--profile P] [--tenant T] [--config FILE]

An MCP server on stdin/stdout (docs/mcp.md): tools sandbox_execute, run_wasm and list_profiles
under the grant P (a call may narrow it, never widen it). Logs go to stderr.

  --profile P        the grant (default compute, or the config file's)
  --tenant T         default mcp
  --config FILE      JSON or TOML operator settings

Example:
  membrane mcp --profile minimal`,

  token: `Usage: membrane token create --tenant T [--profile P] [--host-cap vendor:name]... [--json]
       membrane token list [--json]
       membrane token revoke ID

Bearer tokens for 'membrane serve', stored as SHA-256 hashes in $MEMBRANE_HOME/tokens.sqlite; a
new token (mbt_...) is printed once. --profile defaults to compute. --host-cap grants an embedder
host function cap (meaningful to a server whose engine an embedder built with hostFunctions).

Example:
  membrane token create --tenant alice --profile minimal`,

  agent: `Usage: membrane agent run --task TEXT (--system FILE | --def FILE) [flags]
       membrane agent resume ID [--vfs NAME] [--max-steps N] [--json]

The agent loop: the model (an OpenAI-compatible endpoint reached only through the llm broker)
calls tools built from the grant — shell, vfs_read, vfs_write, vfs_list, exec, fetch (net only),
describe (with toolkits), done — on the agent's own VFS, until it calls done, answers without tools, or runs out of steps.
Every tool call is in the VFS's /_steps.jsonl and the audit log. The endpoint: the config's llm
section (baseUrl, model) or MEMBRANE_LLM_URL and MEMBRANE_LLM_MODEL; the key: MEMBRANE_LLM_KEY only.

  --task TEXT                   what to do (required for run)
  --system FILE                 the system prompt
  --def FILE                    an agent definition: Markdown, front matter (id, model, toolkits,
                                tagline, profile), the prompt under '## System prompt'
  --profile P                   the grant (default network; it must hold llm)
  --vfs NAME                    the agent's VFS (default agent-<session id>)
  --max-steps N                 model turns at most (default 12)
  --tool-timeout DURATION       each tool call's hard limit (default 150s)
  --tenant T                    the principal (default default)
  --config FILE                 operator config (JSON or TOML) with an llm section
  --json                        print { id, vfs, result, outcome, steps, events, usage, error? }

Exit: 0 done or finished; 1 max steps reached or stopped (Ctrl-C); else the error's code below.

Example:
  membrane agent run --def agents/counter.md --task 'count the lines of notes.txt' --vfs work`,
  identity: `Usage: membrane identity create --tenant T [--json]
       membrane identity show --tenant T [--json]
       membrane identity did-web --host H [--tenant T]

A tenant's Ed25519 key pair (docs/provenance.md). create makes one if the tenant has none (it never
replaces one) in $MEMBRANE_HOME/identities/T.ed25519, mode 0600; MEMBRANE_SIGNING_KEY (base64 of a
32-byte seed) supplies the key instead. show prints its did:key. did-web prints the document to
serve at https://H/.well-known/did.json: the same key as did:web:H (--tenant default: default).

Example:
  membrane identity create --tenant alice && membrane identity did-web --host example.com --tenant alice`,

  sign: `Usage: membrane sign FILE.wasm|DIR --tenant T [--name N] [--version V] [--caps W,W] [--did-web HOST] [--json]

Write a signed manifest beside the artifact (FILE.wasm.manifest.json, or DIR/membrane.manifest.json):
name, version, the cap words its wasm imports need plus --caps, the sha256 and size of every file,
the signer's did:key and the time, signed with T's Ed25519 key (membrane identity create).
--did-web HOST names the signer did:web:HOST instead (verify-artifact then needs --did-doc).

Example:
  membrane sign plugin.wasm --tenant alice --version 1.0.0`,

  'verify-artifact': `Usage: membrane verify-artifact MANIFEST [--trust DID]... [--did-doc FILE]... [--json]

Check a signed manifest: {signature, assetIntegrity, valid}. The asset half needs no key: every
listed file beside the manifest must have its sha256. --trust: the signer must be one of these
DIDs. --did-doc: a did:web signer's document (never fetched). Exit 0 when valid, 1 when not.

Example:
  membrane verify-artifact plugin.wasm.manifest.json --trust did:key:z6Mk...`,

  receipt: `Usage: membrane receipt verify RECEIPT [--trust DID]... [--json]

Check a run or exec receipt (membrane run|exec --receipt FILE) offline: the engine's Ed25519
signature over every field (module or source, input and output hashes, grant, limits, fuel, outcome,
host or power calls, the audit anchor). --trust: the engine's did:key must be one of these. Exit 0
when valid, 1 when not.

Example:
  membrane receipt verify run.receipt.json`,

  replay: `Usage: membrane replay RECEIPT --module M [--input I] [--trust DID]... [--json]
       membrane replay EXEC-RECEIPT (--source FILE | -c CODE) [--input I] [--trust DID]... [--json]

Re-run a receipted run or snippet and compare its output hash and fuel: only a pure one replays (no
host or power calls, no persistent VFS or mounts) given the module (or source) and input the receipt
hashes. I is the JSON input 'membrane run|exec --receipt FILE' wrote beside it (FILE.input.json).
Exit 0 when reproduced; 1 when refused (the reason is printed) or different.

Example:
  membrane replay run.receipt.json --module guest.wasm --input run.receipt.json.input.json
  membrane replay exec.json --source snippet.py --input exec.json.input.json`,

  bundle: `Usage: membrane bundle create --vfs NAME [--html FILE] [--tenant T] -o X.mbundle [--json]
       membrane bundle restore X.mbundle --vfs NAME2 [--trust DID]... [--html-out FILE] [--json]

create packs a VFS's three volumes (every file, directory, symlink, mode and mtime), an optional
HTML page and a manifest signed with T's key (default tenant: default) into one zip. restore checks
everything first — the zip's entries (no absolute or .. paths, no symlink entries, at most 50000
entries, declared sizes true and within 1 GiB, no 200:1 bombs), the signature (--trust: the signer
must be one of these) and every file's sha256 — then writes a VFS that must be new or empty.

Example:
  membrane bundle create --vfs notebook --html page.html -o notebook.mbundle`,

  verify: `Usage: membrane verify TOOLKIT [--json]

Check a toolkit manifest's declared caps (caps: [...] in JSON, caps = [...] in a .toml file) before
anything is installed: every word must be a cap word, and some profile must grant them all. Prints
the granting profiles, least-privileged first (the minimal grant), or names the unknown words, or
says why no profile can. Embedder host caps (vendor:name) are granted by the operator, not a profile.
A manifest that also names its commands (name = "T", [commands] NAME = "FILE.wasm") has each
module's imports checked against the declaration, as --toolkit installs them. Exit 0 when
grantable, 1 when not.

Example:
  membrane verify toolkit.toml`,

  worker: `Usage: membrane worker --redis URL [--concurrency N] [--queue NAME]

Join a remote-tier fleet (docs/fabric.md): take jobs that engines with
remote: { redis: URL } submit for tier 'remote', run each on a local engine under
the same walls as \`membrane run\` (a job's limits can only lower this engine's),
and send back the result and the run's audit records. Prints
"membrane worker: ID serving QUEUE" once it is taking jobs; SIGTERM/SIGINT finish
the jobs in hand and exit.

  --redis URL        redis://[user:password@]HOST:PORT[/DB] (or $MEMBRANE_REDIS_URL)
  --concurrency N    jobs run at once, 1..256 (default 2)
  --queue NAME       the BullMQ queue (default membrane-runs)

A worker killed mid-job: its job runs once more on another worker when its grant
has only vfs/commands/exec; otherwise it fails INSTANCE_DEAD.

Example:
  membrane worker --redis redis://127.0.0.1:6379 --concurrency 4`,
};

const SUMMARY: Readonly<Record<string, string>> = {
  run: 'run a .wasm/.wat module once in a fresh sandbox',
  exec: 'run a JS, TS, Python, C or C++ snippet in a fresh sandbox',
  build: 'compile and link C/C++ inside the sandbox',
  inspect: "a module's imports, exports, memory, caps and profiles",
  profiles: 'the four profiles and their limits',
  instrument: 'write the fuel-metered form of a module',
  sh: 'the in-sandbox shell (every command a wasm guest)',
  audit: 'verify, checkpoint or tail the audit log',
  serve: 'the HTTP API, MCP endpoint and dashboard',
  mcp: 'an MCP server on stdin/stdout',
  token: "create, list or revoke serve's bearer tokens",
  agent: 'run an LLM agent over sandboxed tools (the model via the llm broker)',
  identity: "a tenant's Ed25519 identity: did:key and did:web",
  sign: 'sign a module or directory: a manifest of caps and asset hashes',
  'verify-artifact': "check a signed manifest's signature and assets",
  receipt: 'verify a signed run or exec receipt offline',
  replay: "re-run a pure receipted run or snippet and compare its output hash",
  bundle: 'pack a VFS into a signed .mbundle, or restore one',
  verify: "check a toolkit manifest's declared caps against the profiles",
  worker: 'join a remote-tier fleet: run jobs from BullMQ on Redis',
};

export function helpText(): string {
  const codes = ERROR_CODES.map((c) => `  ${String(ERROR_TABLE[c].exitCode).padStart(3)}  ${c.padEnd(22)} ${ERROR_TABLE[c].message}`).join('\n');
  return `membrane ${version()} — a capability-secure WebAssembly sandbox

Usage: membrane COMMAND [flags]      membrane COMMAND --help     membrane --version

Commands:
${Object.keys(COMMAND_HELP).map((c) => `  ${c.padEnd(16)}${SUMMARY[c] ?? ''}`).join('\n')}

${UNITS}

Exit codes:
    0  success (run: a WASI guest's own exit status is passed through)
    ${TAMPERED_EXIT}  audit verify/checkpoint: the audit log was tampered with (or misses the checkpoint)
    ${USAGE_EXIT}  usage error (unknown command or option, bad value)
    ${BIND_FAILED_EXIT}  serve: the address cannot be bound (in use, not permitted, not available)
${codes}
`;
}

export function commandHelp(cmd: string): string {
  return `${COMMAND_HELP[cmd]}\n\n${UNITS}\n`;
}
