// Attack: on the os_process tier a guest's spawning caps run inside its child, which holds its
// own engine — so a guest floods them there, hoping the child's fresh counters and pool give it
// more than the instance tier would: spawning past the live-process cap, a tenant spreading its
// spawns over calls on both tiers, a fork bomb (spawned commands spawning in a loop), spawned
// memory bombs. Each is bounded exactly as on the instance tier: the tenant's exec and
// live-process slots are the parent's (shared by all its calls), a spawned command gets the
// call's memoryBytes, the child runs them on its own two worker threads, the call ends by its
// deadline, and afterwards the child is gone with nothing left (no process, no slot).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { CommandRegistry } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { MAX_LIVE_PROCESSES } from '../../src/engine/bridge/host-services.ts';
import { testEngine } from '../helpers/engine.ts';
import { childPids, waitGone, watchChild } from '../helpers/os-pool.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';

const NO_BWRAP = { tier: 'os_process', bwrapPath: '' } as const;
const fixture = (n: string) => new Uint8Array(readFileSync(new URL(`../fixtures/c/${n}.wasm`, import.meta.url)));
const registry = CommandRegistry.withBuiltins();
registry.register('nest', fixture('nest'));
registry.register('membomb', fixture('membomb'));
const nest = fixture('nest');
const engine = testEngine({ commands: registry, poolSize: 1, osProcessPool: 0 });

async function until(what: string, cond: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** VmRSS of `pid` in bytes (0 once it is gone). */
function rss(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

test(`${MAX_LIVE_PROCESSES + 1} spawns in one os_process call: the last is QUOTA, as on the instance tier`, { timeout: 60_000 }, async () => {
  const argv = ['spawn', String(MAX_LIVE_PROCESSES + 1), 'echo', 'x'];
  const expected = `spawned ${MAX_LIVE_PROCESSES} refused 1 code ${GUEST_ERR.QUOTA}\nwaited ok ${MAX_LIVE_PROCESSES}\n`;
  assert.equal((await engine.run(nest, { profile: 'minimal', tenant: 'spawner', argv })).stdout, expected);
  const there = await engine.run(nest, { profile: 'minimal', tenant: 'spawner', argv, ...NO_BWRAP });
  assert.equal(there.stdout, expected, JSON.stringify(there.error));
  assert.deepEqual(engine.principalUsage('spawner'), { execs: 0, processes: 0 });
});

test('the live-process cap is the tenant\'s across its calls and tiers: a child\'s spawns count in the parent, and come back when it is killed', { timeout: 90_000 }, async () => {
  const tenant = 'spreader';
  const stop = new AbortController();
  let pid = 0;
  const holder = engine.run(nest, { profile: 'minimal', tenant, argv: ['spawn', '20', 'nest', 'spin', '60000'], timeoutMs: 30_000, signal: stop.signal, onChildSpawn: (p) => (pid = p), ...NO_BWRAP });
  await until('20 live processes of the child, counted in the parent', () => engine.principalUsage(tenant).processes === 20);
  const left = `spawned ${MAX_LIVE_PROCESSES - 20} refused 8 code ${GUEST_ERR.QUOTA}\n`;
  const here = await engine.run(nest, { profile: 'minimal', tenant, argv: ['spawn', '20', 'echo', 'x'] });
  assert.match(here.stdout, new RegExp(`^${left}`));
  const there = await engine.run(nest, { profile: 'minimal', tenant, argv: ['spawn', '20', 'echo', 'x'], ...NO_BWRAP });
  assert.match(there.stdout, new RegExp(`^${left}`), JSON.stringify(there.error));
  // Another tenant is not touched by this one's flood.
  const other = await engine.run(nest, { profile: 'minimal', tenant: 'bystander', argv: ['spawn', '20', 'echo', 'x'], ...NO_BWRAP });
  assert.equal(other.stdout, 'spawned 20 refused 0 code 0\nwaited ok 20\n');
  stop.abort();
  assert.equal((await holder).error?.code, 'CANCELLED');
  assert.deepEqual(await waitGone([pid]), []);
  assert.deepEqual(engine.principalUsage(tenant), { execs: 0, processes: 0 });
});

test('a fork bomb in the child (spawned commands spawning in a loop) is bounded and ends by its deadline, the child gone, no process left', { timeout: 60_000 }, async () => {
  const before = childPids(process.pid);
  const timeoutMs = 3_000;
  let pid = 0;
  const t0 = performance.now();
  const argv = ['spawn', '16', 'nest', 'spawn', '16', 'nest', 'spawn', '16', 'nest', 'deep', '0'];
  const { result, started, maxThreads, samples } = await watchChild(() => pid, engine.run(nest, { profile: 'minimal', tenant: 'bomber', argv, timeoutMs, onChildSpawn: (p) => (pid = p), ...NO_BWRAP }));
  const ms = performance.now() - t0;
  assert.ok(result.ok || result.error?.code === 'TIMEOUT', JSON.stringify(result.error));
  assert.ok(ms < timeoutMs + 5_500 + LOAD_SLACK_MS, `the call took ${ms} ms`);
  assert.ok(samples > 0);
  assert.deepEqual(started, [], 'no process was started: spawned commands are threads of the child');
  // Node's own threads, the rewriter's and two guest workers: spawning adds no thread per command.
  assert.ok(maxThreads > 0 && maxThreads <= 40, `the child ran ${maxThreads} threads at once`);
  assert.deepEqual(await waitGone([pid]), []);
  assert.deepEqual(childPids(process.pid), before);
  assert.deepEqual(engine.principalUsage('bomber'), { execs: 0, processes: 0 });
});

test("spawned memory bombs get the call's memoryBytes in the child, as on the instance tier; the child's memory stays bounded", { timeout: 60_000 }, async () => {
  const memoryBytes = 32 * 1024 * 1024;
  const opts = { profile: 'posix', memoryBytes, argv: ['4', '0', 'membomb'] };
  const here = await engine.run(fixture('fanout'), opts);
  let pid = 0;
  let peak = 0;
  const run = engine.run(fixture('fanout'), { ...opts, onChildSpawn: (p: number) => (pid = p), ...NO_BWRAP });
  const sampler = setInterval(() => (peak = Math.max(peak, pid > 0 ? rss(pid) : 0)), 10);
  const there = await run.finally(() => clearInterval(sampler));
  assert.equal(there.stdout, here.stdout, JSON.stringify(there.error));
  assert.equal(there.stdout, [0, 1, 2, 3].map((i) => `task ${i} status -1 error MEMORY_LIMIT out \n`).join(''));
  // Two guest workers at a time, each held to 32 MiB of linear memory (+ its capped JS heap), beside the child's own ~100 MiB.
  assert.ok(peak > 0 && peak < 512 * 1024 * 1024, `the child peaked at ${Math.round(peak / 2 ** 20)} MiB`);
});
