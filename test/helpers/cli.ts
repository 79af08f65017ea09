// Runs the `membrane` CLI as a user would (node bin/membrane.js ...), with $MEMBRANE_HOME set.
import { spawn } from 'node:child_process';

export const BIN = new URL('../../bin/membrane.js', import.meta.url).pathname;

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
  /** The process did not exit within its limit and was killed. */
  killed: boolean;
}

/** Run `node ARGS` (from `cwd`); one that does not exit within `limitMs` is killed and reported, never left hanging. */
export function runNode(args: string[], options: { env?: Record<string, string>; cwd?: string; limitMs?: number } = {}): Promise<Ran> {
  const limitMs = options.limitMs ?? 120_000;
  const t = performance.now();
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: options.cwd, env: { ...process.env, ...options.env } });
    let stdout = '';
    let stderr = '';
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      stderr += `\n[test harness] node ${args.join(' ').slice(0, 200)} did not exit in ${limitMs} ms; killed\n`;
      p.kill('SIGKILL');
    }, limitMs);
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr, ms: performance.now() - t, killed });
    });
  });
}

/** Run the CLI; a run that does not exit within `limitMs` is killed and reported, never left hanging. */
export function runCli(args: string[], env: Record<string, string>, limitMs = 120_000): Promise<Ran> {
  return runNode([BIN, ...args], { env, limitMs });
}
