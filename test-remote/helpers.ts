/**
 * Test helper for the remote tier: a private redis-server on a free 127.0.0.1 port and
 * `membrane worker` processes (the real CLI, run from source), each with its own $MEMBRANE_HOME.
 * Needs Debian's redis-server (not an npm package): these tests live outside `npm test`
 * (`npm run test:remote`).
 */

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../test/helpers/tmp.ts';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const CLI = join(ROOT, 'src/interfaces/cli/main.ts');
export const INSTALL_HINT = 'install redis-server (apt-get install redis-server)';

export function redisServerPath(): string | null {
  const r = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() ? r.stdout.trim() : null;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** A redis-server of our own, ready to take connections; `kill()` after. */
export async function startRedis(bin: string): Promise<{ url: string; proc: ChildProcess; kill: () => void }> {
  const port = await freePort();
  const proc = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const t = setTimeout(() => reject(new Error(`redis-server did not start: ${out.slice(-400)}`)), 10_000);
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('Ready to accept connections')) (clearTimeout(t), resolve());
    });
    proc.once('exit', (c) => (clearTimeout(t), reject(new Error(`redis-server exited ${c}: ${out.slice(-400)}`))));
  });
  return { url: `redis://127.0.0.1:${port}`, proc, kill: () => void proc.kill('SIGKILL') };
}

export interface WorkerProc {
  readonly proc: ChildProcess;
  readonly id: string;
  readonly home: string;
}

/** `membrane worker --redis URL` in a child process; resolves once it prints that it is serving. */
export async function startWorker(url: string, opts: { concurrency?: number; queue?: string } = {}): Promise<WorkerProc> {
  const home = tempDir('membrane-worker-');
  const args = [...['--import', 'tsx', CLI, 'worker', '--redis', url, '--concurrency', String(opts.concurrency ?? 1)], ...(opts.queue ? ['--queue', opts.queue] : [])];
  const proc = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MEMBRANE_HOME: home } });
  const id = await new Promise<string>((resolve, reject) => {
    let out = '';
    let err = '';
    const t = setTimeout(() => reject(new Error(`worker did not start: ${err.slice(-600)}`)), 60_000);
    proc.stderr!.on('data', (d: Buffer) => void (err += d.toString()));
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /membrane worker: (\S+) serving/.exec(out);
      if (m) (clearTimeout(t), resolve(m[1]!));
    });
    proc.once('exit', (c) => (clearTimeout(t), reject(new Error(`worker exited ${c}: ${err.slice(-600)}`))));
  });
  return { proc, id, home };
}

export async function stopWorker(w: WorkerProc): Promise<void> {
  if (w.proc.exitCode !== null || w.proc.signalCode !== null) return;
  const done = new Promise((r) => w.proc.once('exit', r));
  w.proc.kill('SIGTERM');
  const t = setTimeout(() => w.proc.kill('SIGKILL'), 10_000);
  await done;
  clearTimeout(t);
}

/** `membrane audit verify` on a $MEMBRANE_HOME: exit code and output. */
export function auditVerify(home: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', CLI, 'audit', 'verify'], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, MEMBRANE_HOME: home }, timeout: 60_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}
