// The attack: leave processes behind through the os_process pool — pre-started children that
// outlive engine.close(), that keep the host process from exiting, or that survive the host
// (orphans with a storage dir). close() kills every waiting child and waits for it; idle children
// never hold the host's event loop; a child whose parent is gone reads the end of its stdin and exits.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { spawn } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEngine } from '../../src/index.ts';
import { pooledChildren } from '../../src/engine/os-process/lane.ts';
import { TEST_CACHE } from '../helpers/engine.ts';
import { wat } from '../helpers/wat.ts';
import { existsSync, gone, homeOf, poolFull, waitGone } from '../helpers/os-pool.ts';

const HOST = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/os-process/pool-host.ts');
const OS = { tier: 'os_process', bwrapPath: '' } as const;

test('close with children pooled leaves no process and no storage dir', async () => {
  const engine = createEngine({ poolSize: 1, osProcessPool: 2, cacheDir: TEST_CACHE });
  assert.equal((await engine.run(await wat('noop'), { ...OS, invoke: 'noop' })).ok, true);
  assert.equal((await engine.exec({ language: 'js', code: '1', ...OS })).ok, true); // a second configuration
  const pids = await poolFull(engine, 4);
  const homes = pids.map(homeOf);
  await engine.close();
  assert.ok(pids.every(gone), `left after close: ${pids.filter((p) => !gone(p)).join(',')}`);
  assert.deepEqual(homes.filter(existsSync), []);
  assert.deepEqual(pooledChildren(engine.config), []);
});

test('a pool large enough to exhaust the host is refused at engine creation; 0 turns it off', async () => {
  assert.throws(() => createEngine({ poolSize: 0, osProcessPool: 17 }), /osProcessPool must be ≤ 16/);
  assert.throws(() => createEngine({ poolSize: 0, osProcessPool: -1 }), /osProcessPool/);
  const off = createEngine({ poolSize: 0, osProcessPool: 0, cacheDir: TEST_CACHE });
  assert.equal((await off.run(await wat('noop'), { ...OS, invoke: 'noop' })).ok, true);
  await new Promise((res) => setTimeout(res, 200));
  assert.deepEqual(pooledChildren(off.config), []);
  await off.close();
});

test('a call after close does not start a pool again', async () => {
  const engine = createEngine({ poolSize: 0, osProcessPool: 2, cacheDir: TEST_CACHE });
  await engine.close();
  const r = await engine.run(await wat('noop'), { ...OS, invoke: 'noop' });
  assert.equal(r.error?.code, 'INSTANCE_DEAD');
  await new Promise((res) => setTimeout(res, 200));
  assert.deepEqual(pooledChildren(engine.config), []);
});

test('idle pooled children do not keep the host process alive, and neither they nor their storage dirs outlive it', async () => {
  const host = spawn(process.execPath, ['--import', 'tsx', HOST], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  host.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const t0 = Date.now();
  const code = await new Promise<number | null>((resolve) => host.on('close', resolve));
  assert.equal(code, 0);
  assert.ok(Date.now() - t0 < 60_000);
  const kids = JSON.parse(out.trim()) as { pid: number; home: string }[];
  assert.equal(kids.length, 2);
  assert.ok(kids.every((k) => k.home.includes('membrane-osproc-')));
  assert.deepEqual(await waitGone(kids.map((k) => k.pid)), [], 'pooled children outlived their host');
  assert.deepEqual(kids.map((k) => k.home).filter(existsSync), [], 'their storage dirs outlived their host');
});
