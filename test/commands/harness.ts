// Test-only harness that runs the built-in commands (commands/bin/NAME.wasm) the way Membrane
// runs any guest: through the engine, under the `compute` profile (the least-privileged one that
// grants `vfs`), fuel-metered, with captured stdio and its files in the engine's WASI-over-VFS.
//
// Each Sandbox owns one VFS database in this process's temporary MEMBRANE_HOME; every command it
// runs opens that same file as its `/`, so one command's writes are the next one's reads. The
// test seeds and inspects files through `Vfs` directly — there is no host directory behind `/`.
// One engine serves a whole test file and is closed when the file's tests end.
//
// This checks the commands' behaviour, not the walls: a command the sandbox stops (a fault, a
// timeout, fuel) has no exit status and fails the test with the engine's error.
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';
import { O_CREAT, O_TRUNC, Vfs, VfsError, removeDatabase, type InodeKind } from '../../src/storage/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

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

/** The smallest profile that grants `vfs`: the commands get files and nothing else. */
const PROFILE = 'compute';

const HOME = tempDir('membrane-commands-');
process.env['MEMBRANE_HOME'] = HOME;
const engine = testEngine();
after(() => rmSync(HOME, { recursive: true, force: true }));

const modules = new Map<CommandName, Uint8Array>();

function moduleFor(name: CommandName): Uint8Array {
  let bytes = modules.get(name);
  if (bytes === undefined) {
    bytes = new Uint8Array(readFileSync(join(BIN_DIR, `${name}.wasm`)));
    modules.set(name, bytes);
  }
  return bytes;
}

let sandboxes = 0;

/** A fresh VFS that a test's commands see as "/" (the workspace volume). */
export class Sandbox {
  readonly file: string;
  private opened: Vfs | null = null;

  constructor() {
    this.file = join(HOME, `sandbox-${++sandboxes}.sqlite`);
  }

  /** The test's own handle on the VFS, opened on first use (most tests only pipe stdin). */
  private get vfs(): Vfs {
    return (this.opened ??= Vfs.open({ file: this.file }));
  }

  /** Writes files relative to "/", creating parent directories. */
  write(files: Record<string, string | Uint8Array>): void {
    for (const [path, data] of Object.entries(files)) {
      const parts = path.split('/').filter((p) => p !== '');
      for (let i = 1; i < parts.length; i++) this.mkdir(`/${parts.slice(0, i).join('/')}`);
      const st = this.vfs.open('workspace', `/${parts.join('/')}`, O_CREAT | O_TRUNC);
      this.vfs.write(st.ino, 0, typeof data === 'string' ? new TextEncoder().encode(data) : data);
    }
  }

  read(path: string): string {
    const st = this.vfs.open('workspace', abs(path), 0);
    return Buffer.from(this.vfs.read(st.ino, 0, st.size)).toString('utf8');
  }

  exists(path: string): boolean {
    return this.kind(path) !== null;
  }

  isDirectory(path: string): boolean {
    return this.kind(path) === 'dir';
  }

  /** The names in directory PATH (no "." or ".."), sorted. */
  list(path = '/'): string[] {
    const ino = this.vfs.stat('workspace', abs(path)).ino;
    const names: string[] = [];
    for (let cookie = 0; ;) {
      const batch = this.vfs.readdir(ino, cookie);
      if (batch.length === 0) break;
      for (const e of batch) if (e.name !== '.' && e.name !== '..') names.push(e.name);
      cookie = batch[batch.length - 1]?.next ?? cookie;
    }
    return names.sort();
  }

  /** Runs NAME with ARGV (without argv[0]) and STDIN; returns status and captured output. */
  async run(name: CommandName, argv: readonly string[] = [], stdin: string | Uint8Array = ''): Promise<RunResult> {
    const r = await this.exec(name, argv, stdin);
    return { status: r.status, stdout: r.stdout.toString('utf8'), stderr: r.stderr };
  }

  /** Like run(), for binary output: status and the exact stdout bytes. */
  async runBytes(name: CommandName, argv: readonly string[] = [], stdin: string | Uint8Array = ''): Promise<{ status: number; stdout: Buffer }> {
    const r = await this.exec(name, argv, stdin);
    return { status: r.status, stdout: r.stdout };
  }

  private async exec(name: CommandName, argv: readonly string[], stdin: string | Uint8Array): Promise<{ status: number; stdout: Buffer; stderr: string }> {
    const r = await engine.run(moduleFor(name), {
      profile: PROFILE,
      id: name, // argv[0]
      argv,
      stdin,
      vfsFile: this.file,
      captureBytes: true,
    });
    if (r.exitCode === undefined) throw new Error(`${name} stopped by the sandbox: ${r.error?.code}: ${r.error?.message}`);
    if (r.warnings.length > 0) throw new Error(`${name}: ${r.warnings.join('; ')}`);
    return { status: r.exitCode, stdout: Buffer.from(r.stdoutBytes ?? new Uint8Array(0)), stderr: r.stderr };
  }

  /** Runs STAGES left to right, each stage's stdout being the next one's stdin. */
  async pipe(stages: ReadonlyArray<readonly [CommandName, ...string[]]>, stdin = ''): Promise<RunResult> {
    let result: RunResult = { status: 0, stdout: stdin, stderr: '' };
    for (const [name, ...argv] of stages) result = await this.run(name, argv, result.stdout);
    return result;
  }

  dispose(): void {
    this.opened?.close();
    removeDatabase(this.file);
  }

  private mkdir(path: string): void {
    try {
      this.vfs.mkdir('workspace', path);
    } catch (e) {
      if (!(e instanceof VfsError) || e.code !== 'EEXIST') throw e;
    }
  }

  private kind(path: string): InodeKind | null {
    try {
      return this.vfs.stat('workspace', abs(path)).kind;
    } catch (e) {
      if (e instanceof VfsError && e.code === 'ENOENT') return null;
      throw e;
    }
  }
}

function abs(path: string): string {
  return path.startsWith('/') ? path : `/${path}`;
}

/** Runs FN with a fresh Sandbox and removes it afterwards. */
export async function withSandbox<T>(fn: (sb: Sandbox) => Promise<T>): Promise<T> {
  const sb = new Sandbox();
  try {
    return await fn(sb);
  } finally {
    sb.dispose();
  }
}
