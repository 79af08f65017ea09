// The attack: a call that lands in a pre-started os_process child tries to reach a later call
// through it — the same child serving a second call (its interpreter, globals, open files), or
// what it left in the child's storage dir (the guest VFS), its environment or its memory. A
// pooled child serves one call and is killed with its group; each child has its own storage dir,
// removed when it exits; no child has served a call before its own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { startChild } from '../../src/engine/os-process/spawn.ts';
import { testEngine } from '../helpers/engine.ts';
import { environOf, existsSync, gone, homeOf, poolFull, waitGone } from '../helpers/os-pool.ts';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const PROBE = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/os-process/probe.mjs');
const OS = { tier: 'os_process', bwrapPath: '' } as const;
const engine = testEngine({ poolSize: 1, osProcessPool: 2 });

test('a pooled child reused for a second call: each call gets a child of its own, and each is gone after its call', async () => {
  await engine.exec({ language: 'js', code: '0', ...OS }); // makes the pool (of JS children)
  const waiting = await poolFull(engine, 2);
  const pids: number[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await engine.exec({ language: 'js', code: `globalThis.n = (globalThis.n ?? 0) + 1; n`, ...OS, onChildSpawn: (p) => pids.push(p) });
    assert.equal(r.ok, true, JSON.stringify(r.error));
    assert.equal(r.result, 1, 'a global of an earlier call was seen');
  }
  assert.equal(new Set(pids).size, 3, `a child served two calls: ${pids.join(',')}`);
  assert.ok(waiting.includes(pids[0]!), 'the first call did not take a pooled child');
  assert.deepEqual(await waitGone(pids), []);
  for (const p of pids) assert.ok(!(await poolFull(engine, 2)).includes(p), 'a child that served a call is back in the pool');
});

test("a child's call method runs once: a second request on the same child is refused", async () => {
  const child = startChild({ entry: PROBE, readDirs: [], bwrap: null, addons: false, shareNet: false });
  const limits = { killAfterMs: 20_000, maxReplyBytes: 1 << 20 };
  const first = child.call(JSON.stringify({ mode: 'crash' }), limits).catch((e: unknown) => e);
  assert.throws(() => child.call(JSON.stringify({ mode: 'crash' }), limits), (e: unknown) => e instanceof SandboxError && e.code === 'INTERNAL');
  assert.ok((await first) instanceof SandboxError);
  assert.deepEqual(await waitGone([child.pid]), []);
});

test("a pooled child's storage or env seen by the next call: a VFS file, the storage dir and the environment are the call's own", async () => {
  await engine.exec({ language: 'js', code: '0', ...OS });
  await poolFull(engine, 2);
  let first = { pid: 0, home: '', env: [] as string[] };
  const w = await engine.exec({
    language: 'js',
    code: 'vfs.write("/left-behind.txt", "secret of call one"); vfs.read("/left-behind.txt")',
    ...OS,
    onChildSpawn: (pid) => (first = { pid, home: homeOf(pid), env: environOf(pid) }),
  });
  assert.equal(w.ok, true, JSON.stringify(w.error));
  assert.equal(w.result, 'secret of call one');
  assert.deepEqual(first.env.map((kv) => kv.split('=')[0]), ['MEMBRANE_HOME']);
  assert.deepEqual(await waitGone([first.pid]), []);
  assert.equal(existsSync(first.home), false, "the first child's storage dir outlived it");
  let second = { pid: 0, home: '' };
  const r = await engine.exec({ language: 'js', code: 'vfs.read("/left-behind.txt")', ...OS, onChildSpawn: (pid) => (second = { pid, home: homeOf(pid) }) });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.result, null, 'the next call read the first call\'s file');
  assert.notEqual(second.home, first.home);
  assert.notEqual(second.pid, first.pid);
  assert.ok(gone(first.pid));
});
