/**
 * The `os_process` tier's child: the entry of `dist/os-child.mjs`, started by spawn.ts with an
 * empty environment under Node's permission model (and bubblewrap when present). Reads its boot
 * line (the engine settings) from stdin, builds a one-call engine and warms what the boot line
 * says (a no-op module's run, or the JS/TS interpreters), writes the ready line, then reads its
 * one request line, runs it, writes one reply line to stdout and exits. While the call runs, its
 * brokered powers and its host functions go to the parent (broker-link.ts): request lines on
 * stdout, answer lines on stdin. The host caps the call was granted come with its request (their
 * names, function names and argument size caps — no function): its engine links and offers
 * exactly those, as stand-ins that ask the parent. A pooled child waits between the ready line and the request; it has seen no call before
 * its own (the warm-up is the engine's own constant work, its audit records dropped) and serves
 * none after.
 *
 * A call granted a spawning cap runs its commands here too — registered commands, exec'd ones,
 * spawned processes, `run_command_many` — on this engine's own worker threads, from the parent's
 * registry sent with the request (commands.ts): nothing spawns a process, inside or outside.
 *
 * Owns: the child's side of the protocol (protocol.ts) and its one-call engine.
 * Invariant: the child's engine is configured only from the boot line, whose limits are the
 * parent engine's (operator limits, fuel, output cap), and runs only the request, whose limits
 * the parent already resolved against them: a child never gets more than its call. Its brokers
 * are the parent's (forwarded): it holds no store, secret or socket. Its commands are the
 * parent's registry or fewer; under the parent's `requireSigned` it has no trusted DID, so every
 * module a guest names by VFS path is refused (the call's own module was checked by the parent). Audit records of its own
 * engine go to the reply (the parent merges them into its chain), never to a database here. End
 * of stdin before a request (the parent closed the pool, or died) → the child exits.
 * Does not protect against: anything the process boundary itself does not stop — see spawn.ts.
 */

import { createEngine } from '../engine.ts';
import type { ExecOptions } from '../../lanes/exec.ts';
import { ParentLink } from './broker-link.ts';
import { childCallbacks } from './stream.ts';
import { ChildRegistry } from './commands.ts';
import { decode, encode, fromB64, READY_LINE, toB64, type ChildBoot, type ChildReply, type ChildRequest } from './protocol.ts';

/** stdin as lines (the last may end with the input instead of a newline): handed to `onLine` with their index. */
async function readLines(onLine: (line: string, index: number) => void): Promise<void> {
  let parts: Buffer[] = [];
  let index = 0;
  for await (const chunk of process.stdin) {
    const c = chunk as Buffer;
    let at = 0;
    for (let nl = c.indexOf(10); nl >= 0; nl = c.indexOf(10, at)) {
      parts.push(c.subarray(at, nl));
      onLine(Buffer.concat(parts).toString('utf8'), index++);
      parts = [];
      at = nl + 1;
    }
    if (at < c.length) parts.push(c.subarray(at));
  }
  if (parts.length > 0) onLine(Buffer.concat(parts).toString('utf8'), index++);
}

/** A module whose `_start` does nothing: running it once starts the rewriter, the compile path and the guest worker's first run. */
const NOOP_MODULE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
  0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type: () -> ()
  0x03, 0x02, 0x01, 0x00, // one function of that type
  0x07, 0x0a, 0x01, 0x06, 0x5f, 0x73, 0x74, 0x61, 0x72, 0x74, 0x00, 0x00, // export "_start"
  0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b, // its body: end
]);

async function main(): Promise<void> {
  const audit: { kind: string; detail?: unknown }[] = [];
  const registry = new ChildRegistry();
  let engine: ReturnType<typeof createEngine> | null = null;
  const link = new ParentLink((line) => void process.stdout.write(line));
  let ready: Promise<void> = Promise.resolve();
  let gotRequest: (text: string | null) => void = () => {};
  const request = new Promise<string | null>((resolve) => (gotRequest = resolve));
  const boot = (line: string): void => {
    const b = decode(line) as ChildBoot;
    const s = b.engine;
    const e = createEngine({
      commands: registry, // empty until the request: the parent's registry comes with a call granted a spawning cap
      // No trusted DIDs here: under the parent's requireSigned every module a guest names by VFS path is refused.
      ...(s.requireSigned === true ? { requireSigned: [] } : {}),
      workerHeapMb: s.workerHeapMb,
      workerStackMb: s.workerStackMb,
      osProcessPool: 0,
      poolSize: b.warm === 'run' ? 1 : 0, // a pooled child for a run warms one guest worker while it waits
      maxWorkers: 2,
      operatorLimits: s.operatorLimits,
      strictProfiles: s.strictProfiles,
      fuel: s.fuel,
      fuelChunk: s.fuelChunk,
      outputLimitBytes: s.outputLimitBytes,
      cacheDir: s.cacheDir ?? false,
      onLog: () => {},
      brokers: { audit: () => ({ append: (x) => void audit.push({ kind: x.kind, detail: x.detail }) }), forward: link },
    });
    engine = e;
    // Nothing of a call is here yet: what warms is the engine's own (a no-op module's run; the interpreters' boot).
    if (b.warm === 'run') registry.admit(NOOP_MODULE); // the engine's own module: not a caller's, not gated
    const warmed = b.warm === 'run' ? e.run(NOOP_MODULE).then((r) => void r) : b.warm === 'js' ? e.warmExec() : Promise.resolve();
    // A failed warm-up is not the call's: the call then does the work itself (and reports its own errors).
    ready = warmed.catch(() => {}).then(() => void process.stdout.write(READY_LINE));
  };
  readLines((line, i) => (i === 0 ? boot(line) : i === 1 ? gotRequest(line) : link.answer(line))).then(
    () => {
      gotRequest(null);
      link.close(); // the parent is gone: no broker call will be answered
    },
    () => process.exit(70),
  );
  const rest = await request;
  const e = engine as ReturnType<typeof createEngine> | null;
  if (e === null || rest === null || rest.length === 0) process.exit(0); // no request: the pool was closed (or the parent died)
  await ready; // the ready line goes before anything of the call (its broker requests, its reply)
  const req = decode(rest) as ChildRequest;
  audit.length = 0; // what the warm-up recorded (if anything) is not the call's
  // The call's granted host caps: stand-ins linked and offered now, each call served by the parent.
  if (req.hostFunctions !== undefined) link.grant(req.hostFunctions);
  // The streams the call asked for: each chunk its callback gets goes to the parent as an `out` line.
  const streams = childCallbacks(req.stream, (line) => void process.stdout.write(line));
  if (Array.isArray(req.commands)) registry.fill(req.commands);
  let result: Record<string, unknown>;
  if (req.kind === 'run') {
    const opts: Record<string, unknown> = { ...req.opts, ...streams };
    const stdin = opts['stdin'] as { b64?: unknown } | undefined;
    if (typeof stdin === 'object' && stdin !== null && typeof stdin.b64 === 'string') opts['stdin'] = fromB64(stdin.b64);
    const module = fromB64(req.module);
    registry.admit(module); // the parent's requireSigned gate held for these bytes
    const r = await e.run(module, opts);
    const { stdoutBytes, ...out } = r;
    result = { ...out, ...(stdoutBytes ? { stdoutBytes: toB64(stdoutBytes) } : {}) };
  } else {
    result = { ...(await e.exec({ ...(req.opts as unknown as ExecOptions), ...streams })) };
  }
  // No engine.close: the process exits now, its threads with it (and the parent kills its group).
  const reply: ChildReply = { result, audit };
  process.stdout.write(`${encode(reply)}\n`, () => process.exit(0));
}

main().catch(() => {
  // No host paths or stacks leave the child: the parent reports INSTANCE_DEAD for a silent exit.
  process.exit(70);
});
