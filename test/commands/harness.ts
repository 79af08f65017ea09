// Test-only harness that runs a built-in command (commands/bin/NAME.wasm) under Node's own
// `node:wasi`, with a fresh temporary directory preopened as "/".
//
// This is ONLY a functional harness for the commands' logic. `node:wasi` maps a real host
// directory and its documentation says it is not a sandbox; nothing here is a security boundary
// and no Membrane code path uses it. The engine's WASI-over-VFS replaces it for real runs.
import { mkdtempSync, openSync, closeSync, readFileSync, writeFileSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { WASI } from 'node:wasi';

const BIN_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'commands', 'bin');

export const COMMAND_NAMES = [
  'echo', 'cat', 'wc', 'head', 'tail', 'grep', 'sort', 'uniq', 'tr', 'ls',
  'mkdir', 'rm', 'cp', 'mv', 'sha256sum', 'base64', 'seq',
] as const;
export type CommandName = (typeof COMMAND_NAMES)[number];

export interface RunResult {
  status: number;
  stdout: string;
  stderr: string;
}

const modules = new Map<string, WebAssembly.Module>();

// Node 20 intermittently segfaults when a few hundred finished `node:wasi` instances are left
// for the garbage collector; collecting after every run keeps the count at one. The flag is set
// only to obtain `gc` in this test process.
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

function moduleFor(name: CommandName): WebAssembly.Module {
  let mod = modules.get(name);
  if (mod === undefined) {
    mod = new WebAssembly.Module(readFileSync(join(BIN_DIR, `${name}.wasm`)));
    modules.set(name, mod);
  }
  return mod;
}

/** A temporary directory that a test's commands see as "/". */
export class Sandbox {
  readonly root: string;

  constructor() {
    this.root = mkdtempSync(join(tmpdir(), 'membrane-commands-'));
  }

  /** Writes files relative to the root, creating parent directories. */
  write(files: Record<string, string | Uint8Array>): void {
    for (const [path, data] of Object.entries(files)) {
      const full = join(this.root, path);
      mkdirSync(dirname(full), { recursive: true });
      writeFileSync(full, data);
    }
  }

  read(path: string): string {
    return readFileSync(join(this.root, path), 'utf8');
  }

  /** Runs NAME with ARGV (without argv[0]) and STDIN; returns status and captured output. */
  run(name: CommandName, argv: readonly string[] = [], stdin: string | Uint8Array = ''): RunResult {
    const r = this.exec(name, argv, stdin);
    return { status: r.status, stdout: r.stdout.toString('utf8'), stderr: r.stderr.toString('utf8') };
  }

  /** Like run(), for binary output: status and the exact stdout bytes. */
  runBytes(name: CommandName, argv: readonly string[] = [], stdin: string | Uint8Array = ''): { status: number; stdout: Buffer } {
    const r = this.exec(name, argv, stdin);
    return { status: r.status, stdout: r.stdout };
  }

  private exec(name: CommandName, argv: readonly string[], stdin: string | Uint8Array): { status: number; stdout: Buffer; stderr: Buffer } {
    const io = mkdtempSync(join(tmpdir(), 'membrane-commands-io-'));
    const paths = { in: join(io, 'in'), out: join(io, 'out'), err: join(io, 'err') };
    writeFileSync(paths.in, stdin);
    const fds = [openSync(paths.in, 'r'), openSync(paths.out, 'w'), openSync(paths.err, 'w')] as const;
    try {
      const wasi = new WASI({
        version: 'preview1',
        args: [name, ...argv],
        env: {},
        preopens: { '/': this.root },
        stdin: fds[0],
        stdout: fds[1],
        stderr: fds[2],
        returnOnExit: true,
      });
      const instance = new WebAssembly.Instance(moduleFor(name), wasi.getImportObject() as WebAssembly.Imports);
      const status = wasi.start(instance);
      return { status, stdout: readFileSync(paths.out), stderr: readFileSync(paths.err) };
    } finally {
      for (const fd of fds) closeSync(fd);
      rmSync(io, { recursive: true, force: true });
      collect();
    }
  }

  /** Runs STAGES left to right, each stage's stdout being the next one's stdin. */
  pipe(stages: ReadonlyArray<readonly [CommandName, ...string[]]>, stdin = ''): RunResult {
    let result: RunResult = { status: 0, stdout: stdin, stderr: '' };
    for (const [name, ...argv] of stages) result = this.run(name, argv, result.stdout);
    return result;
  }

  dispose(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** Runs FN with a fresh Sandbox and removes it afterwards. */
export function withSandbox<T>(fn: (sb: Sandbox) => T): T {
  const sb = new Sandbox();
  try {
    return fn(sb);
  } finally {
    sb.dispose();
  }
}
