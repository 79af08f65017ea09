// The attack: a call gets a pre-started os_process child started with wider permissions than the
// call needs — one allowed native addons (`--allow-addons`, for calls granted the guest VFS) or
// one outside bubblewrap handed to a call that asked for it. The pool is keyed by the child's
// flags: a call only ever gets a child started with exactly its own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ChildPool } from '../../src/engine/os-process/pool.ts';
import { testEngine } from '../helpers/engine.ts';
import { wat } from '../helpers/wat.ts';
import { poolFull } from '../helpers/os-pool.ts';

const READY = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/os-process/ready.mjs');
const OS = { tier: 'os_process', bwrapPath: '' } as const;
const argvOf = (pid: number): string[] => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');

test('a call without the guest VFS never gets a pooled child allowed native addons', async () => {
  const engine = testEngine({ poolSize: 1, osProcessPool: 2 });
  const noop = await wat('noop');
  let first: string[] = [];
  assert.equal((await engine.run(noop, { ...OS, invoke: 'noop', onChildSpawn: (p) => (first = argvOf(p)) })).ok, true); // compute grants vfs
  assert.ok(first.includes('--allow-addons'));
  const addonChildren = await poolFull(engine, 2);
  assert.ok(addonChildren.every((p) => argvOf(p).includes('--allow-addons')));
  let narrow = 0;
  let argv: string[] = [];
  const r = await engine.run(noop, { ...OS, invoke: 'noop', caps: [], onChildSpawn: (p) => ((narrow = p), (argv = argvOf(p))) });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.ok(!addonChildren.includes(narrow), 'a call without vfs took a child allowed addons');
  assert.ok(!argv.includes('--allow-addons'), `its child was started with --allow-addons: ${argv.join(' ')}`);
});

test('the pool hands out a child only for the exact configuration it was started with', async () => {
  const plain = { readDirs: [], bwrap: null, addons: false, shareNet: false, warm: 'run' } as const;
  const others = [{ ...plain, addons: true }, { ...plain, bwrap: '/usr/bin/bwrap' }, { ...plain, shareNet: true }, { ...plain, warm: 'js' as const }, { ...plain, readDirs: ['/tmp'] }];
  for (const other of others) {
    const pool = new ChildPool({ size: 1, boot: () => 'x\n' }, async () => READY);
    assert.equal(await pool.take(plain), null);
    pool.refill(plain); // starts the pool of `plain`, as the lane does after a call
    for (let i = 0; i < 400 && !pool.children().some((c) => c.ready); i++) await new Promise((r) => setTimeout(r, 25));
    const [waiting] = pool.children();
    assert.equal(waiting?.ready, true);
    const got = await pool.take(other);
    assert.equal(got, null, `a child of ${JSON.stringify(plain)} went to a call of ${JSON.stringify(other)}`);
    const mine = await pool.take(plain);
    assert.equal(mine?.pid, waiting!.pid); // it was there, for its own configuration
    mine!.kill();
    await pool.close();
  }
});
