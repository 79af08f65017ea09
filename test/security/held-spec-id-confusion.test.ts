// Attack: run under another run's spec — its profile, its walls, its tenant — by way of the spec
// part a pool worker holds by id. A held run sends its spec's fixed part (link plan, walls,
// profile, VFS) once per worker and names it by a spec id afterwards (bridge/held-specs.ts);
// only the run's own part (session, argv, env, depth, stdin) travels every time. Runs of one
// module under many policies and tenants on one worker — more spec parts than it holds, so parts
// are forgotten and sent again — must each see exactly their own session, profile and env; a
// fixed part is named by id only when it equals, value for value, what that worker was sent
// (never after the caller changed the objects it came from); and nothing of a run's own part is
// kept for the next one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { watText } from '../helpers/wat.ts';
import { forgedSpec } from '../helpers/forged-run.ts';
import { HELD_SPECS, HeldSpecs, fixedOf, ownText, sameJson } from '../../src/engine/bridge/held-specs.ts';
import type { GuestSpec } from '../../src/engine/bridge/protocol.ts';

// One worker: every run lands on the thread whose held spec parts are under attack.
const engine = testEngine({ poolSize: 1, maxWorkers: 1, maxWorkersPerTenant: 1 });

// session_info → stdout; the number of environment variables → stderr (one byte, '0' + n).
const WHO = `(module
  (import "membrane" "session_info" (func $si (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $es (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (call $si (i32.const 1024) (i32.const 4096)))
    (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 16)))
    (drop (call $es (i32.const 32) (i32.const 36)))
    (i32.store8 (i32.const 40) (i32.add (i32.const 48) (i32.load (i32.const 32))))
    (i32.store (i32.const 0) (i32.const 40)) (i32.store (i32.const 4) (i32.const 1))
    (drop (call $w (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 16)))))`;

test('one module under many policies and tenants on one worker: every run sees its own spec', async () => {
  const bytes = await watText(WHO);
  // Profiles, and timeouts that change only the fixed part's host-wait bound: more parts than a worker holds.
  const configs = [
    ...['compute', 'minimal', 'network'].map((profile) => ({ profile })),
    ...Array.from({ length: HELD_SPECS + 3 }, (_, i) => ({ profile: i % 2 === 0 ? 'compute' : 'minimal', timeoutMs: 2000 + i * 7 })),
  ];
  const order = [...configs.keys(), ...[...configs.keys()].reverse(), ...[...configs.keys()].map((i) => (i * 5) % configs.length)];
  for (const [k, i] of order.entries()) {
    const c = configs[i]!;
    const tenant = k % 2 === 0 ? 'alice' : 'mallory';
    const env = k % 3 === 0 ? { SECRET: `s${k}`, OTHER: 'x' } : undefined;
    const id = `run-${k}-of-${tenant}`;
    const r = await engine.run(bytes, { ...c, tenant, id, ...(env ? { env } : {}) });
    assert.equal(r.ok, true, JSON.stringify(r.error));
    assert.deepEqual(JSON.parse(r.stdout), { id, tenant, profile: c.profile }, `run ${k} (${JSON.stringify(c)}) saw another run's session`);
    assert.equal(r.stderr, env ? '2' : '0', `run ${k} saw another run's environment`);
  }
});

test('a spec part is named by id only when it equals what the worker was sent', () => {
  const held = new HeldSpecs();
  const spec = forgedSpec() as unknown as GuestSpec;
  const first = held.refer(fixedOf(spec));
  assert.ok(first && first.fixed !== null, 'a new part is sent with its JSON');
  assert.deepEqual(held.refer(fixedOf(structuredClone(spec))), { specId: first.specId, fixed: null, forgetSpec: null }, 'an equal part, other objects: by id');
  // Every wall and word of the fixed part makes another part.
  const variants: Array<[string, GuestSpec]> = [
    ['memory cap', { ...spec, maxMemoryPages: 17 }],
    ['output cap', { ...spec, output: { ...spec.output, limitBytes: 4097 } }],
    ['fail on output limit', { ...spec, output: { ...spec.output, failOnLimit: true } }],
    ['fuel metering', { ...spec, fuel: { metered: true, chunk: 1000 } }],
    ['fuel chunk', { ...spec, fuel: { ...spec.fuel, chunk: 1001 } }],
    ['host-wait bound', { ...spec, hostWaitMs: 5001 }],
    ['link plan', { ...spec, link: ['membrane.kv_get'] }],
    ['profile', { ...spec, session: { ...spec.session, profile: 'posix' } }],
    ['lane port', { ...spec, wasi: { ...spec.wasi, port: true } }],
    ['log sink', { ...spec, logSink: 'host' }],
    ['pooled memory', { ...spec, poolMemory: { initialPages: 1, maxPages: 16 } }],
    ['vfs', { ...spec, vfs: { file: ':memory:', preopens: [], readOnly: false, maxBytes: 1 << 20, maxInodes: 100 } }],
  ];
  const ids = new Set([first.specId]);
  const fresh = new HeldSpecs();
  for (const [what, v] of variants) {
    const ref = fresh.refer(fixedOf(v));
    assert.ok(ref && ref.fixed !== null, `${what}: a new part`);
    assert.ok(!ids.has(ref.specId), `${what}: a new id`);
    ids.add(ref.specId);
    assert.equal(sameJson(fixedOf(v), JSON.parse(first.fixed!)), false, `${what}: not equal to the first part`);
  }
  // The caller changes the objects a sent part came from: the next run's part is compared with
  // what was sent, not with those objects, so it is sent again under a new id.
  const mutable = forgedSpec() as unknown as { output: { limitBytes: number } } & GuestSpec;
  const own = new HeldSpecs();
  const sent = own.refer(fixedOf(mutable))!;
  mutable.output.limitBytes = 1 << 30;
  const after = own.refer(fixedOf(mutable))!;
  assert.notEqual(after.specId, sent.specId);
  assert.equal(JSON.parse(after.fixed!).output.limitBytes, 1 << 30);
  // Past HELD_SPECS the least recently used part is forgotten, in the message adding the new one.
  const lru = new HeldSpecs();
  const refs = Array.from({ length: HELD_SPECS }, (_, i) => lru.refer(fixedOf({ ...spec, hostWaitMs: 100 + i }))!);
  assert.equal(lru.refer(fixedOf({ ...spec, hostWaitMs: 100 }))!.specId, refs[0]!.specId, 'a held part, touched');
  const added = lru.refer(fixedOf({ ...spec, hostWaitMs: 999 }))!;
  assert.equal(added.forgetSpec, refs[1]!.specId, 'the least recently used part is forgotten');
  // What JSON would change is never sent by id; a run's own part is sent whole every time.
  assert.equal(new HeldSpecs().refer(fixedOf({ ...spec, output: { limitBytes: Infinity, failOnLimit: false } })), null);
  assert.equal(ownText({ ...spec, depth: 1.5 }), null);
  assert.deepEqual(JSON.parse(ownText({ ...spec, wasi: { ...spec.wasi, argv: ['a', 'b'], env: [['K', 'v']] } })!), ['forged', 'mallory', ['a', 'b'], [['K', 'v']], 0]);
});
