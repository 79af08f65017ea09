import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { TenantScheduler } from '../../src/fabric/tenant-scheduler.ts';

test('admission is round-robin across tenants, not FIFO', async () => {
  const s = new TenantScheduler({ slots: 1, perTenant: 1 });
  let current = await s.admit('a', 1000);
  const order: string[] = [];
  const next: Promise<void>[] = [];
  for (const [tenant, name] of [['a', 'a1'], ['a', 'a2'], ['a', 'a3'], ['b', 'b1'], ['b', 'b2'], ['c', 'c1']] as const) {
    next.push(
      s.admit(tenant, 1000).then((release) => {
        order.push(name);
        current = release;
      }),
    );
  }
  assert.equal(s.waiting(), 6);
  for (let i = 0; i < 6; i++) {
    const before = order.length;
    current();
    while (order.length === before) await new Promise((r) => setImmediate(r));
  }
  current();
  await Promise.all(next);
  // One FIFO would give a1 a2 a3 b1 b2 c1.
  assert.deepEqual(order, ['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
});

test('a tenant never holds more than its cap; others still get the free slots', async () => {
  const s = new TenantScheduler({ slots: 4, perTenant: 2 });
  const held = [await s.admit('hostile', 1000), await s.admit('hostile', 1000)];
  let third = false;
  const waiting = s.admit('hostile', 1000).then((r) => ((third = true), r));
  const honest = [await s.admit('honest', 1000), await s.admit('honest', 1000)];
  assert.equal(s.running('hostile'), 2);
  assert.equal(s.running(), 4);
  assert.equal(third, false);
  held[0]!();
  const r = await waiting;
  assert.equal(third, true);
  assert.equal(s.running('hostile'), 2);
  for (const f of [r, held[1]!, ...honest]) f();
  assert.equal(s.running(), 0);
});

test('a wait is bounded (OVERLOADED, nothing ran) and an abort leaves the line (CANCELLED)', async () => {
  const s = new TenantScheduler({ slots: 1, perTenant: 1 });
  const hold = await s.admit('a', 1000);
  await assert.rejects(s.admit('b', 30), (e: unknown) => e instanceof SandboxError && e.code === 'OVERLOADED');
  const ac = new AbortController();
  const p = s.admit('b', 5000, ac.signal);
  ac.abort();
  await assert.rejects(p, (e: unknown) => e instanceof SandboxError && e.code === 'CANCELLED');
  assert.equal(s.waiting(), 0);
  hold();
  hold(); // idempotent
  assert.equal(s.running(), 0);
});

test('a tenant alone may use its whole cap; once others are present it is admitted only to its fair share', async () => {
  const s = new TenantScheduler({ slots: 4, perTenant: 4 });
  const a = [await s.admit('a', 1000), await s.admit('a', 1000), await s.admit('a', 1000)];
  assert.equal(s.running('a'), 3);
  const b = s.admit('b', 1000);
  const a4 = s.admit('a', 1000);
  const rb = await b; // the free slot goes to b, not to a's fourth call
  assert.equal(s.running('b'), 1);
  a[0]!();
  a[1]!();
  // a now holds 1; its share among two tenants is 2: the fourth call is admitted, no more.
  const r4 = await a4;
  assert.equal(s.running('a'), 2);
  let fifth = false;
  const a5 = s.admit('a', 1000).then((r) => ((fifth = true), r));
  await new Promise((r) => setImmediate(r));
  assert.equal(fifth, false, 'a was admitted past its fair share while b is present');
  rb();
  const r5 = await a5; // b gone: a alone again
  for (const f of [a[2]!, r4, r5]) f();
  assert.equal(s.running(), 0);
});

test('tryAdmit admits at once only where admit would, and never past a waiting call of the same tenant', async () => {
  const s = new TenantScheduler({ slots: 2, perTenant: 1 });
  const a = s.tryAdmit('a');
  assert.ok(a);
  assert.equal(s.tryAdmit('a'), null, 'a is at its cap');
  const queued = s.admit('a', 1000);
  const ac = new AbortController();
  ac.abort();
  assert.equal(s.tryAdmit('b', ac.signal), null, 'an aborted call is left to admit (CANCELLED)');
  const b = s.tryAdmit('b');
  assert.ok(b);
  assert.equal(s.running(), 2);
  a();
  const a2 = await queued;
  assert.equal(s.tryAdmit('c'), null, 'no free slot');
  b();
  a2();
  s.close();
  assert.equal(s.tryAdmit('a'), null, 'closed');
});
