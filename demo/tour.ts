/**
 * `npm run demo`: a tour of the walls. Hostile and healthy guests run at the same time in one
 * engine; the table says what each tried, how it was stopped and how long that took, and a
 * persistent healthy instance keeps answering calls throughout. The last act is the agent loop
 * driven by a scripted model (demo/agent-act.ts).
 */

import { snippetTour } from './snippets.ts';
import { agentTour } from './agent-act.ts';
import { printTable } from './table.ts';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import initWabt from 'wabt';
import { CommandRegistry, createEngine, type RunResult } from '../src/index.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const wabt = await initWabt();
const compiled = new Map<string, Uint8Array>();
const wat = (name: string): Uint8Array => {
  let bytes = compiled.get(name);
  if (!bytes) {
    const m = wabt.parseWat(name, readFileSync(join(root, 'test/fixtures/wat', `${name}.wat`), 'utf8'), { bulk_memory: true });
    bytes = new Uint8Array(m.toBinary({}).buffer);
    m.destroy();
    compiled.set(name, bytes);
  }
  return bytes;
};
for (const n of ['noop', 'spin', 'spin-start', 'grow-loop', 'big-initial', 'recurse', 'kv-import', 'env-system', 'output-flood', 'count']) wat(n);
const c = (name: string) => new Uint8Array(readFileSync(join(root, 'test/fixtures/c', `${name}.wasm`)));

interface Act {
  guest: string;
  tried: string;
  run: () => Promise<RunResult>;
  /** What the guest itself reported, when the wall answered it with an error code. */
  saw?: (r: RunResult) => string;
}

const registry = CommandRegistry.withBuiltins();
registry.register('nest', c('nest'));
const engine = createEngine({ poolSize: 4, commands: registry });
const lastLine = (r: RunResult) => r.stdout.trim().split('\n').at(-1) ?? '';
const acts: Act[] = [
  { guest: 'hello.c', tried: 'print a line (WASI command)', run: () => engine.run(c('hello')) },
  { guest: 'spin.wat', tried: 'loop forever (budget 1000 ms)', run: () => engine.run(wat('spin'), { invoke: 'run', profile: 'network', timeoutMs: 1000 }) },
  { guest: 'spin.wat', tried: 'loop forever; its caller aborts at 300 ms', run: () => engine.run(wat('spin'), { invoke: 'run', timeoutMs: 5000, signal: AbortSignal.timeout(300) }) },
  { guest: 'spin-start.wat', tried: 'spin inside its start function', run: () => engine.run(wat('spin-start'), { invoke: 'ok', timeoutMs: 500 }) },
  { guest: 'count.wat', tried: 'count to 1e9 on 1e6 fuel', run: () => engine.run(wat('count'), { invoke: 'count', args: [1_000_000_000n], fuel: 1_000_000 }) },
  { guest: 'count.wat', tried: 'memory.fill 60 MiB, 1e6 times', run: () => engine.run(wat('count'), { invoke: 'fill', args: [1_000_000] }) },
  { guest: 'grow-loop.wat', tried: 'memory.grow until it fails', run: () => engine.run(wat('grow-loop'), { invoke: 'run' }) },
  { guest: 'membomb.c', tried: 'malloc 1 MiB blocks forever', run: () => engine.run(c('membomb')) },
  { guest: 'big-initial.wat', tried: 'declare 2000 pages (125 MiB)', run: () => engine.run(wat('big-initial'), { invoke: 'run' }) },
  { guest: 'recurse.wat', tried: 'recurse without end', run: () => engine.run(wat('recurse'), { invoke: 'run', args: [0] }) },
  { guest: 'kv-import.wat', tried: 'import membrane.kv_get under compute', run: () => engine.run(wat('kv-import'), { invoke: 'run' }) },
  { guest: 'env-system.wat', tried: 'import env.system under posix', run: () => engine.run(wat('env-system'), { invoke: 'run', profile: 'posix' }) },
  { guest: 'noop.wat', tried: 'ask for profile "bogus"', run: () => engine.run(wat('noop'), { invoke: 'add', args: [2, 2], profile: 'bogus' }) },
  { guest: 'output-flood.wat', tried: 'write 4 MiB to stdout', run: () => engine.run(wat('output-flood'), { invoke: 'flood', args: [64] }) },
  { guest: 'exit7.c', tried: 'proc_exit(7)', run: () => engine.run(c('exit7')) },
  {
    guest: 'nest.c',
    tried: 'exec itself, deeper and deeper',
    run: () => engine.run(c('nest'), { profile: 'minimal', argv: ['deep', '0'] }),
    saw: (r) => `depths 0-8 ran; the exec to depth 9 got ${lastLine(r).replace('refused ', '')} (QUOTA)`,
  },
  { guest: 'nest.c', tried: 'run_command `seq 1 1e6` on 2e5 fuel', run: () => engine.run(c('nest'), { profile: 'minimal', fuel: 200_000, argv: ['run', 'seq', '1', '1000000'] }) },
  {
    guest: 'netfetch.c',
    tried: 'http_fetch the cloud metadata service',
    run: () => engine.run(c('netfetch'), { profile: 'network', argv: ['fetch', 'http://169.254.169.254/latest/meta-data/'] }),
    saw: (r) => `refused: ${lastLine(r).replace('error ', '')} (DENIED), audited; no socket opened`,
  },
  {
    guest: 'netfetch.c',
    tried: 'http_fetch http://0x7f.1/ (loopback, disguised)',
    run: () => engine.run(c('netfetch'), { profile: 'network', argv: ['fetch', 'http://0x7f.1/'] }),
    saw: (r) => `refused: ${lastLine(r).replace('error ', '')} (DENIED), audited`,
  },
  {
    guest: 'vfsapi.c',
    tried: "vfs_query: ATTACH '/etc/passwd'",
    run: () => engine.run(c('vfsapi'), { argv: ['query', "ATTACH '/etc/passwd' AS host"] }),
    saw: (r) => `refused: ${lastLine(r).replace('query error ', '')} (DENIED); nothing opened`,
  },
];

// A healthy persistent instance answers calls for as long as the tour runs.
const healthy = await engine.start('healthy', wat('noop'), { profile: 'minimal' });
let running = true;
const latencies: number[] = [];
const heartbeat = (async () => {
  while (running) {
    const t = performance.now();
    const r = await healthy.call('incr');
    if (!r.ok) throw new Error(`the healthy instance failed: ${r.error?.code}`);
    latencies.push(performance.now() - t);
    if (latencies.length % 64 === 0) await new Promise((res) => setImmediate(res));
  }
})();

const t0 = performance.now();
const results = await Promise.all(
  acts.map(async (a) => {
    const r = await a.run();
    return { ...a, r, at: performance.now() - t0 };
  }),
);
running = false;
await heartbeat;

function outcome(r: RunResult): string {
  if (r.ok && r.exitCode === 0) return `ran: exit 0, stdout ${JSON.stringify(r.stdout.trim().slice(0, 30))}, ${r.fuelUsed} fuel`;
  if (r.ok && r.warnings.length) return `ran with a warning: ${r.warnings[0]!}`;
  if (r.ok) return `ran: result ${JSON.stringify(r.result)}`;
  const e = r.error!;
  const d = e.details as Record<string, unknown>;
  switch (e.code) {
    case 'TIMEOUT':
      return `TIMEOUT at ${Number(d['elapsedMs']).toFixed(0)} ms, stopped at its next fuel refill`;
    case 'FUEL_EXHAUSTED':
      return `FUEL_EXHAUSTED after ${Number(d['fuelUsed']).toExponential(0)} units`;
    case 'MEMORY_LIMIT':
      return d['reachedBytes']
        ? `MEMORY_LIMIT: a grow to ${(Number(d['reachedBytes']) / 1048576).toFixed(0)} MiB trapped (cap ${Number(d['limitBytes']) / 1048576} MiB)`
        : `MEMORY_LIMIT at load: ${d['initialPages']} initial pages > ${d['maxPages']}; never started`;
    case 'LINK_UNSATISFIED': {
      const m = (d['missing'] as Array<{ import: string; cap: string | null }>)[0]!;
      return `LINK_UNSATISFIED: ${m.import} (${m.cap ? `needs cap ${m.cap}` : 'no cap grants it'}); never started`;
    }
    case 'GUEST_EXIT':
      return `exit ${r.exitCode} (passed through)`;
    case 'CANCELLED':
      return 'CANCELLED by its caller; the worker freed at once';
    case 'STACK_OVERFLOW':
      return 'STACK_OVERFLOW; the worker lives on';
    default:
      return `${e.code}: ${e.message.slice(0, 50)}`;
  }
}

const rows = results.map((x) => [x.guest, x.tried, x.saw && x.r.ok ? x.saw(x.r) : outcome(x.r), `${x.r.durationMs.toFixed(1)} ms`]);
printTable('Membrane: a tour of the walls (all guests ran concurrently in one engine)', ['guest', 'what it tried', 'how it ended', 'took'], rows);
const sorted = [...latencies].sort((a, b) => a - b);
const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
console.log(
  `\nMeanwhile the healthy instance "healthy" answered ${latencies.length} calls in ${(performance.now() - t0).toFixed(0)} ms: ` +
    `p50 ${(pct(0.5) * 1000).toFixed(0)} µs, p99 ${(pct(0.99) * 1000).toFixed(0)} µs, max ${pct(1).toFixed(1)} ms; info() = ${JSON.stringify(healthy.info())}`,
);
console.log(`Worker threads terminated and replaced during the tour: ${engine.stats().workersReplaced} (runaways stopped themselves at a fuel refill).`);
await snippetTour(engine);
await engine.close();
await agentTour();
