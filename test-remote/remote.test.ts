// The remote tier end to end: a private redis-server, `membrane worker` processes, an engine with
// `remote: { redis }` — same stdout as a local run, both workers serve, and a worker killed -9
// mid-job: retried on another worker when the grant is retry-safe, INSTANCE_DEAD when it is not;
// the submitter's audit chain (with the merged `remote.*` records) still verifies.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { INSTALL_HINT, ROOT, auditVerify, redisServerPath, startRedis, startWorker, stopWorker, type WorkerProc } from './helpers.ts';
import { watText } from '../test/helpers/wat.ts';
import { tempDir } from '../test/helpers/tmp.ts';

const home = tempDir('membrane-submitter-');
process.env['MEMBRANE_HOME'] = home;
const { Engine } = await import('../src/index.ts');
const { AuditLog } = await import('../src/storage/audit.ts');

function records(kind: string) {
  const log = AuditLog.open();
  try {
    return log.tail({ kind, limit: 1000 });
  } finally {
    log.close();
  }
}

const cat = readFileSync(join(ROOT, 'commands/bin/cat.wasm'));
// 1.2e9 iterations (9.6e9 fuel, under the network profile's 1e10): 3-8 s on the 2-core test machine, long enough to kill its worker.
const LONG = `(module (func (export "_start") (local i32) (loop (local.set 0 (i32.add (local.get 0) (i32.const 1))) (br_if 0 (i32.lt_u (local.get 0) (i32.const 1200000000))))))`;

let redis: Awaited<ReturnType<typeof startRedis>> | null = null;
const workers: WorkerProc[] = [];

before(async () => {
  const bin = redisServerPath();
  if (!bin) assert.fail(`redis-server is not on PATH: ${INSTALL_HINT}`);
  redis = await startRedis(bin);
  workers.push(...(await Promise.all([startWorker(redis.url), startWorker(redis.url)])));
});

after(async () => {
  await Promise.all(workers.map(stopWorker));
  redis?.kill();
});

test('two membrane workers serve an engine with remote configured: same stdout as locally, both take jobs, records merged', async () => {
  const local = new Engine({ cacheDir: false });
  const remote = new Engine({ cacheDir: false, remote: { redis: redis!.url } });
  try {
    const input = 'hello from the fleet\n'.repeat(50);
    const a = await local.run(cat, { stdin: input });
    const b = await remote.run(cat, { stdin: input, tier: 'remote' });
    assert.equal(b.ok, true, JSON.stringify(b.error));
    assert.equal(b.stdout, a.stdout);
    assert.equal(b.exitCode, 0);
    assert.ok(b.fuelUsed > 0);
    // A fan-out through the fleet: 24 inputs in flight 8 at a time over two workers of concurrency 1.
    const inputs = Array.from({ length: 24 }, (_, i) => `line ${i}\n`);
    const out = await remote.fanout({ command: 'cat', inputs, width: 8, tier: 'remote' });
    assert.deepEqual(out.map((r) => (r.ok ? Buffer.from(r.output).toString() : r.error.code)), inputs);
    const runs = records('remote.run');
    const served = new Set(runs.map((r) => String(r.detail['worker'])));
    assert.deepEqual([...served].sort(), workers.map((w) => w.id).sort(), 'both workers took jobs');
    assert.ok(runs.every((r) => r.detail['outcome'] === 'ok'));
  } finally {
    await Promise.all([local.close(), remote.close()]);
  }
});

test('a module the workers do not know is stored once by hash; a job that would raise limits is refused before it is queued', async () => {
  const e = new Engine({ cacheDir: false, remote: { redis: redis!.url } });
  try {
    const r = await e.run(cat, { tier: 'remote', stdin: 'x', timeoutMs: 10 * 60_000 });
    // The profile's ceiling holds: the grant is resolved locally (narrowed) and the worker resolves it again against its own.
    assert.equal(r.ok, true, JSON.stringify(r.error));
    const m = await e.run(cat, { tier: 'remote', mounts: ['/tmp:/tmp'] });
    assert.equal(m.ok, false);
    assert.equal(m.error?.code, 'POLICY_INVALID');
    assert.match(m.error!.message, /does not carry mounts/);
  } finally {
    await e.close();
  }
});

// 6e8 iterations (4.8e9 fuel, under network's 1e10): about a second on the 2-core test machine.
const SPIN = `(module (func (export "_start") (local i32) (loop (local.set 0 (i32.add (local.get 0) (i32.const 1))) (br_if 0 (i32.lt_u (local.get 0) (i32.const 600000000))))))`;

test("one tenant's backlog waits on the submitter, not ahead of another tenant's job in the shared queue", async () => {
  const spin = await watText(SPIN);
  const e = new Engine({ cacheDir: false, remote: { redis: redis!.url, maxInFlight: 2, maxInFlightPerTenant: 1 } });
  try {
    // Warm: the submitter's queue connection, and the module on both workers (a first run compiles it).
    await e.run(cat, { tier: 'remote', tenant: 'calm', stdin: 'warm' });
    await Promise.all([e.run(spin, { tier: 'remote', tenant: 'hog', profile: 'network' }), e.run(spin, { tier: 'remote', tenant: 'calm', profile: 'network' })]);
    const t0 = performance.now();
    const hog = Array.from({ length: 6 }, () => e.run(spin, { tier: 'remote', tenant: 'hog', profile: 'network', timeoutMs: 20_000 }).then((r) => ({ r, at: performance.now() - t0 })));
    await new Promise((r) => setTimeout(r, 300));
    const calm = await e.run(cat, { tier: 'remote', tenant: 'calm', stdin: 'first in line\n' });
    const calmAt = performance.now() - t0;
    assert.equal(calm.stdout, 'first in line\n', JSON.stringify(calm.error));
    const done = await Promise.all(hog);
    for (const { r } of done) assert.equal(r.ok, true, JSON.stringify(r.error));
    // The hog had one job in the fleet at a time; in one FIFO its six jobs would all have run
    // (two at a time on the two workers) before the calm tenant's.
    const hogAt = done.map((d) => d.at).sort((a, b) => a - b);
    assert.ok(calmAt < hogAt[2]!, `calm answered at ${calmAt.toFixed(0)} ms; the hog's jobs at ${hogAt.map((x) => x.toFixed(0)).join(', ')} ms`);
    // A tenant past its share waits at most queueWaitMs here, then OVERLOADED: nothing was queued for it.
    const strict = new Engine({ cacheDir: false, remote: { redis: redis!.url, maxInFlight: 2, maxInFlightPerTenant: 1, queueWaitMs: 100 } });
    try {
      const both = await Promise.all([0, 1].map(() => strict.run(spin, { tier: 'remote', tenant: 'hog', profile: 'network', timeoutMs: 20_000 })));
      assert.deepEqual(both.map((r) => (r.ok ? 'ok' : r.error?.code)).sort(), ['OVERLOADED', 'ok']);
    } finally {
      await strict.close();
    }
  } finally {
    await e.close();
  }
});

/** Resolves once a job on `queue` is active (a worker holds it), then a moment more for its run to start; fails after 30 s. */
async function untilActive(url: string, queue: string): Promise<void> {
  const { Queue } = await import('bullmq');
  const q = new Queue(queue, { connection: { url }, prefix: 'membrane' });
  try {
    const end = Date.now() + 30_000;
    while ((await q.getActiveCount()) === 0) {
      if (Date.now() > end) throw new Error(`no job became active on ${queue} within 30 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 300));
  } finally {
    await q.close();
  }
}

async function killMidJob(queue: string, caps: string[]): Promise<{ result: Awaited<ReturnType<InstanceType<typeof Engine>['run']>>; first: WorkerProc; second: WorkerProc }> {
  const long = await watText(LONG);
  const first = await startWorker(redis!.url, { queue });
  workers.push(first);
  const e = new Engine({ cacheDir: false, remote: { redis: redis!.url, queue } });
  try {
    const pending = e.run(long, { tier: 'remote', profile: 'network', caps, timeoutMs: 25_000 });
    await untilActive(redis!.url, queue); // the only worker on this queue has taken it (and runs it)
    first.proc.kill('SIGKILL');
    const second = await startWorker(redis!.url, { queue });
    workers.push(second);
    return { result: await pending, first, second };
  } finally {
    await e.close();
  }
}

test('kill -9 of a worker mid-job: a retry-safe grant (vfs only) runs again on another worker and ends ok, exactly once', async () => {
  const { result, first, second } = await killMidJob('crash-retry', ['vfs']);
  assert.equal(result.ok, true, JSON.stringify(result.error));
  const runs = records('remote.run').filter((r) => r.detail['worker'] === second.id || r.detail['worker'] === first.id);
  assert.equal(runs.length, 1, 'one outcome acknowledged');
  assert.equal(runs[0]!.detail['worker'], second.id);
  assert.equal(runs[0]!.detail['attempt'], 2);
});

test('kill -9 of a worker mid-job: a grant with effects (kv) is not run again: INSTANCE_DEAD; audit verify passes', async () => {
  const { result } = await killMidJob('crash-dead', ['vfs', 'kv']);
  assert.equal(result.ok, false);
  assert.equal(result.error?.code, 'INSTANCE_DEAD');
  const dead = records('remote.run').filter((r) => r.detail['outcome'] === 'INSTANCE_DEAD');
  assert.equal(dead.length, 1);
  assert.equal(dead[0]!.detail['retrySafe'], false);
  const v = auditVerify(home);
  assert.equal(v.status, 0, v.out);
});
