// Attack: one tenant starves the others through `membrane serve`. Tenant A (network profile)
// floods the guest workers with runs parked in host calls on a server that never answers. The
// engine admits A only up to its share of the workers (src/fabric/tenant-scheduler.ts), so
// tenant B's `echo hi` gets its answer within its own deadline; A's excess calls get a declared,
// retryable refusal — 503 OVERLOADED with Retry-After, nothing run — or their TIMEOUT, never a
// 500/INTERNAL.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { call, testServer, type Reply } from '../helpers/http.ts';
import { testEngine } from '../helpers/engine.ts';
import { tableResolver } from '../net/servers.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOST = '127.0.0.2';
const WORKERS = 2;
const guest = Buffer.from(readFileSync(new URL('../fixtures/c/netfetch.wasm', import.meta.url))).toString('base64');

const held: Socket[] = [];
const silent = createServer({ allowHalfOpen: true }, (s) => {
  held.push(s);
  s.on('error', () => {});
  s.on('data', () => {});
});
await new Promise<void>((r) => silent.listen(0, HOST, r));
const port = (silent.address() as AddressInfo).port;
after(async () => {
  for (const s of held) s.destroy();
  await new Promise<void>((r) => silent.close(() => r()));
});

const home = tempDir('membrane-starvation-');
const engine = testEngine({
  poolSize: WORKERS,
  maxWorkers: WORKERS,
  brokers: { databaseFile: join(home, 'engine.sqlite'), net: { allowCidrs: [`${HOST}/32`], resolver: tableResolver({ 'silent.example.test': [HOST] }) } },
});
const t = await testServer({ engine });
const a = t.token('tenant-a', 'network');
const b = t.token('tenant-b', 'compute');

/** Tenant A: `n` runs, each parked in a tcp_request to the silent server for `timeoutMs`. */
function flood(n: number, timeoutMs: number): Promise<Reply>[] {
  return Array.from({ length: n }, () => call(t.url, '/v1/runs', a, 'POST', { module: guest, argv: ['tcp', `silent.example.test:${port}`, 'ping'], timeout_ms: timeoutMs }));
}

/** A tenant's share of the workers (the engine's default maxWorkersPerTenant: half, at least one). */
const SHARE = Math.max(1, Math.ceil(WORKERS / 2));

/** Until A holds its whole share (the silent server has accepted that many more connections), and never more. */
async function workersBusy(before: number): Promise<void> {
  const end = Date.now() + 10_000;
  while (held.length < before + SHARE && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  assert.ok(held.length >= before + SHARE, `tenant A holds its share of the workers (${held.length - before} of ${SHARE})`);
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(held.length - before, SHARE, 'tenant A was admitted past its share');
}

async function echo(timeoutMs: number): Promise<{ reply: Reply; ms: number }> {
  const t0 = performance.now();
  const reply = await call(t.url, '/v1/runs', b, 'POST', { command: 'echo', argv: ['hi'], timeout_ms: timeoutMs });
  return { reply, ms: performance.now() - t0 };
}

// Warm the module cache for both tenants' modules, so no timing below includes a compile.
await call(t.url, '/v1/runs', a, 'POST', { module: guest, argv: ['tcp', '127.0.0.1:1', 'x'] });
await call(t.url, '/v1/runs', b, 'POST', { command: 'echo', argv: ['warm'] });

test("while A's long calls hold its share of the workers, B's echo is answered within its own deadline; A's excess is 503 OVERLOADED with Retry-After — never INTERNAL", async () => {
  const before = held.length;
  const runs = flood(WORKERS * 5, 4_000);
  await workersBusy(before);
  const { reply, ms } = await echo(1_000);
  console.log(`# B's echo while A floods: ${reply.status} ${reply.body?.error?.code ?? ''} after ${ms.toFixed(0)} ms`);
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  assert.equal(reply.body.stdout, 'hi\n');
  // A's calls hold their workers 4 s each: an answer that waited for one would come after that.
  assert.ok(ms <= 1_000 + 2_000, `the answer came after ${ms.toFixed(0)} ms, past B's 1 000 ms deadline`);
  // A's own queued runs get the declared refusal (with Retry-After) or their TIMEOUT — none is a 500.
  let refused = 0;
  for (const r of await Promise.all(runs)) {
    assert.notEqual(r.status, 500, JSON.stringify(r.body));
    if (r.status === 200) assert.equal(r.body.error?.code, 'TIMEOUT', JSON.stringify(r.body));
    else {
      assert.equal(r.body.error.code, 'OVERLOADED', JSON.stringify(r.body));
      assert.equal(r.headers.get('retry-after'), '1');
      refused++;
    }
  }
  assert.ok(refused > 0, "A's flood past its share was refused, not run");
});

test("A's 1-second calls at a silent server end at their deadline, so B's echo with a 5 s deadline is answered", async () => {
  const before = held.length;
  const runs = flood(WORKERS * 3, 1_000);
  await workersBusy(before);
  const { reply, ms } = await echo(5_000);
  console.log(`# B's echo behind ${WORKERS * 3} of A's 1 s calls: ${reply.status} after ${ms.toFixed(0)} ms`);
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  assert.equal(reply.body.ok, true, JSON.stringify(reply.body));
  assert.equal(reply.body.stdout, 'hi\n');
  assert.ok(ms <= 5_000 + LOAD_SLACK_MS, `answered after ${ms.toFixed(0)} ms, past its 5 000 ms deadline`);
  for (const r of await Promise.all(runs)) {
    assert.notEqual(r.status, 500, JSON.stringify(r.body));
    if (r.status === 200) assert.equal(r.body.error?.code, 'TIMEOUT', JSON.stringify(r.body));
  }
});
