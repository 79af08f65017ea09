/**
 * The `os_process` tier's child: the entry of `dist/os-child.mjs`, started by runner.ts with an
 * empty environment under Node's permission model (and bubblewrap when present). Reads one
 * request from stdin, runs it on a local engine with the parent's settings (walls, operator
 * limits, fuel), writes one reply to stdout and exits.
 *
 * Owns: the child's side of the protocol (protocol.ts) and its one-call engine.
 * Invariant: the child's engine is configured only from the request, whose limits the parent
 * already resolved against its own operator limits: a child never gets more than its call.
 * Audit records go to the reply (the parent merges them into its chain), never to a database here.
 * Does not protect against: anything the process boundary itself does not stop — see runner.ts.
 */

import { createEngine } from '../engine.ts';
import type { ExecOptions } from '../../lanes/exec.ts';
import { decode, encode, fromB64, toB64, type ChildReply, type ChildRequest } from './protocol.ts';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function main(): Promise<void> {
  const req = decode(await readStdin()) as ChildRequest;
  const audit: { kind: string; detail?: unknown }[] = [];
  const s = req.engine;
  const engine = createEngine({
    poolSize: 0,
    maxWorkers: 2,
    operatorLimits: s.operatorLimits,
    strictProfiles: s.strictProfiles,
    fuel: s.fuel,
    fuelChunk: s.fuelChunk,
    outputLimitBytes: s.outputLimitBytes,
    cacheDir: s.cacheDir ?? false,
    onLog: () => {},
    brokers: { audit: () => ({ append: (e) => void audit.push({ kind: e.kind, detail: e.detail }) }) },
  });
  let result: Record<string, unknown>;
  try {
    if (req.kind === 'run') {
      const opts = { ...req.opts };
      const stdin = opts['stdin'] as { b64?: unknown } | undefined;
      if (typeof stdin === 'object' && stdin !== null && typeof stdin.b64 === 'string') opts['stdin'] = fromB64(stdin.b64);
      const r = await engine.run(fromB64(req.module), opts);
      const { stdoutBytes, ...rest } = r;
      result = { ...rest, ...(stdoutBytes ? { stdoutBytes: toB64(stdoutBytes) } : {}) };
    } else {
      result = { ...(await engine.exec(req.opts as unknown as ExecOptions)) };
    }
  } finally {
    await engine.close();
  }
  const reply: ChildReply = { result, audit };
  process.stdout.write(encode(reply), () => process.exit(0));
}

main().catch(() => {
  // No host paths or stacks leave the child: the parent reports INSTANCE_DEAD for a silent exit.
  process.exit(70);
});
