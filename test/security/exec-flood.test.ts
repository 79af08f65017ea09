// Attack: a guest (or a tenant's many guests) floods the exec cap — recursing through exec,
// running execs from many instances at once, spawning processes without end. Each hits its
// per-principal limit (DESIGN §4) with QUOTA (-9), and every slot comes back afterwards.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CommandRegistry, createEngine, type Engine } from '../../src/index.ts';
import { GUEST_ERR, MAX_EXEC_DEPTH } from '../../src/abi/command.ts';
import { MAX_CONCURRENT_EXECS, MAX_LIVE_PROCESSES } from '../../src/engine/bridge/host-services.ts';
import { Vfs, resolveVfs } from '../../src/storage/index.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

const nest = new Uint8Array(readFileSync(new URL('../fixtures/c/nest.wasm', import.meta.url)));
let engine: Engine;

before(() => {
  process.env['MEMBRANE_HOME'] = tempDir('membrane-exec-flood-');
  const registry = CommandRegistry.withBuiltins();
  registry.register('nest', nest);
  registry.register('waiter', new Uint8Array(readFileSync(new URL('../fixtures/c/waiter.wasm', import.meta.url))));
  // One tenant holding every exec slot at once: its share of the workers is the whole engine.
  engine = createEngine({ commands: registry, poolSize: 1, maxWorkers: MAX_CONCURRENT_EXECS + 4, maxWorkersPerTenant: MAX_CONCURRENT_EXECS + 4, workerHeapMb: 16 });
});
after(() => engine.close());

async function until(what: string, cond: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test(`exec recursion stops at depth ${MAX_EXEC_DEPTH}: the exec that would be depth ${MAX_EXEC_DEPTH + 1} is refused`, async () => {
  const r = await engine.run(nest, { profile: 'minimal', argv: ['deep', '0'] });
  assert.equal(r.ok, true, r.error?.message);
  const lines = r.stdout.trim().split('\n');
  assert.deepEqual(lines.slice(0, MAX_EXEC_DEPTH + 1), Array.from({ length: MAX_EXEC_DEPTH + 1 }, (_, d) => `depth ${d}`));
  assert.equal(lines[MAX_EXEC_DEPTH + 1], `refused ${GUEST_ERR.QUOTA}`);
  assert.equal(lines.length, MAX_EXEC_DEPTH + 2);
  const log = new AuditLog(openDatabase(join(process.env['MEMBRANE_HOME']!, 'engine.sqlite')));
  const denied = log.tail({ kind: 'denied' }).filter((r) => r.detail['op'] === 'exec');
  log.close();
  assert.deepEqual(denied.map((r) => [r.detail['code'], r.detail['why']]), [['QUOTA', `depth ${MAX_EXEC_DEPTH + 1} > ${MAX_EXEC_DEPTH}`]]);
});

test(`${MAX_CONCURRENT_EXECS + 1} concurrent execs from one tenant: the last is refused with QUOTA, then all slots return`, { timeout: 120_000 }, async () => {
  const tenant = 'flooder';
  const vfs = 'exec-flood';
  const opts = { profile: 'posix', tenant, vfs };
  const held = Array.from({ length: MAX_CONCURRENT_EXECS }, () => engine.run(nest, { ...opts, argv: ['exec', 'waiter', '/go'] }));
  await until(`${MAX_CONCURRENT_EXECS} execs in flight`, () => engine.principalUsage(tenant).execs === MAX_CONCURRENT_EXECS);
  const refused = await engine.run(nest, { ...opts, argv: ['exec', 'echo', 'one too many'] });
  assert.equal(refused.stdout, `error ${GUEST_ERR.QUOTA}\n`);
  // Another tenant is not affected by this one's flood.
  const other = await engine.run(nest, { profile: 'minimal', tenant: 'bystander', argv: ['exec', 'echo', 'fine'] });
  assert.equal(other.stdout, 'fine\nstatus=0 error=\n');
  const store = Vfs.open({ file: resolveVfs({ name: vfs }).file });
  try {
    store.open('workspace', 'go', 1);
  } finally {
    store.close();
  }
  const results = await Promise.all(held);
  for (const r of results) assert.equal(r.stdout, 'found\nstatus=0 error=\n', r.error?.message);
  assert.deepEqual(engine.principalUsage(tenant), { execs: 0, processes: 0 });
  const again = await engine.run(nest, { ...opts, argv: ['exec', 'echo', 'room again'] });
  assert.equal(again.stdout, 'room again\nstatus=0 error=\n');
});

test(`${MAX_LIVE_PROCESSES + 1} live processes from one tenant: the last spawn is refused with QUOTA`, async () => {
  const r = await engine.run(nest, { profile: 'minimal', tenant: 'spawner', argv: ['spawn', String(MAX_LIVE_PROCESSES + 1), 'echo', 'x'] });
  assert.equal(r.stdout, `spawned ${MAX_LIVE_PROCESSES} refused 1 code ${GUEST_ERR.QUOTA}\nwaited ok ${MAX_LIVE_PROCESSES}\n`);
  assert.deepEqual(engine.principalUsage('spawner'), { execs: 0, processes: 0 });
});

test('the live-process limit is per tenant across its instances, and a job\'s processes die with it', async () => {
  const tenant = 'sharer';
  // The budget must outlast 20 process starts plus the second job on a loaded 2-core machine (4 s did not, under Node 24 in CI).
  const first = engine.run(nest, { profile: 'posix', tenant, vfs: 'sharer', argv: ['spawn', '20', 'waiter', '/never'], timeoutMs: 12_000 });
  await until('20 live processes', () => engine.principalUsage(tenant).processes === 20);
  const second = await engine.run(nest, { profile: 'minimal', tenant, argv: ['spawn', '20', 'echo', 'x'] });
  assert.match(second.stdout, new RegExp(`^spawned ${MAX_LIVE_PROCESSES - 20} refused 8 code ${GUEST_ERR.QUOTA}\n`));
  const r = await first;
  assert.equal(r.error?.code, 'TIMEOUT');
  await until('the timed-out job\'s processes to be reaped', () => engine.principalUsage(tenant).processes === 0, 10_000);
});

test('a killed process is reaped: waiting for it afterwards is NOT_FOUND', async () => {
  const t = performance.now();
  const r = await engine.run(nest, { profile: 'minimal', argv: ['spawnkill', 'nest', 'spin', '20000'] });
  assert.equal(r.stdout, `pid 1 kill 0 wait ${GUEST_ERR.NOT_FOUND}\n`);
  assert.ok(performance.now() - t < 1000 + LOAD_SLACK_MS);
});
