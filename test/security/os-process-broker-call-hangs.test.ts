// The attack: a guest in an os_process child holds its call — and the parent's sockets — past its
// budget through a broker call that never returns (a server that accepts and never answers), or
// a hijacked child sends the request and then goes silent. The call's deadline still ends it
// (TIMEOUT; the child is killed and gone), and the parent's in-flight broker work ends with it:
// the connection to the hanging server is closed, whether the child withdrew the request, its
// deadline passed, or the caller cancelled the call; revoking the tenant ends it REVOKED, as for a
// worker.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { testEngine } from '../helpers/engine.ts';
import { callerOf, forged, gone, request, testBrokers, waitGone } from '../helpers/forged-child.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';

const OS = { tier: 'os_process', bwrapPath: '' } as const;
const dir = mkdtempSync(join(tmpdir(), 'membrane-os-hang-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const engine = testEngine({ poolSize: 1, brokers: { databaseFile: join(dir, 'engine.sqlite'), net: { allowCidrs: ['127.0.0.1/32'] } } });
const netfetch = new Uint8Array(readFileSync(new URL('../fixtures/c/netfetch.wasm', import.meta.url)));
/** Open connections to the server that never answers. */
const open = new Set<Socket>();
let server: Server;
let url = '';

before(async () => {
  server = createServer(() => {}); // accepts, reads the request, never answers
  server.on('connection', (s: Socket) => {
    open.add(s);
    s.on('close', () => open.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/never`;
});
after(() => {
  for (const s of open) s.destroy();
  server.close();
});

/** Wait until the server has no open connection (the parent dropped its fetch); how long it took, or -1. */
async function closedWithin(ms: number): Promise<number> {
  const t0 = performance.now();
  while (open.size > 0 && performance.now() - t0 < ms) await new Promise((r) => setTimeout(r, 20));
  return open.size === 0 ? performance.now() - t0 : -1;
}

test('a C guest whose fetch hangs is TIMEOUT at its budget on os_process; its child is gone and its connection closed', async () => {
  let pid = 0;
  const t0 = performance.now();
  const r = await engine.run(netfetch, { ...OS, profile: 'network', timeoutMs: 1_000, argv: ['fetch', url], onChildSpawn: (p) => (pid = p) });
  const ms = performance.now() - t0;
  assert.equal(r.error?.code, 'TIMEOUT', JSON.stringify(r.error));
  assert.ok(ms < 1_000 + 5_000 + LOAD_SLACK_MS, `took ${ms} ms`); // the budget, a fresh child's boot allowance, slack
  assert.deepEqual(await waitGone([pid]), []);
  assert.ok((await closedWithin(2_000)) >= 0, 'the hanging fetch outlived its call');
});

test('a JS snippet awaiting a hanging fetch is TIMEOUT on os_process, and its connection is closed', async () => {
  const code = `(async () => { await fetch(${JSON.stringify(url)}); return 'answered'; })()`;
  const r = await engine.exec({ language: 'js', code, profile: 'network', timeoutMs: 1_000, ...OS });
  assert.equal(r.error?.code, 'TIMEOUT', JSON.stringify(r.error));
  assert.ok((await closedWithin(2_000)) >= 0, 'the hanging fetch outlived its call');
});

test('a hijacked child that sends a fetch and goes silent is killed at its deadline; the fetch is aborted with it', async () => {
  const brokers = testBrokers([], { net: { allowCidrs: ['127.0.0.1/32'] } });
  const fetchLine = request(1, 'http_fetch', [JSON.stringify({ url })], { leftMs: 600_000 }); // it claims ten minutes
  const r = await forged(brokers, callerOf('hang', ['net']), { lines: [fetchLine], hang: true }, 1_500);
  assert.ok(r.error instanceof SandboxError && r.error.code === 'TIMEOUT', String(r.error));
  assert.ok(r.ms < 1_500 + LOAD_SLACK_MS, `took ${r.ms} ms`);
  assert.ok(gone(r.pid));
  assert.ok((await closedWithin(2_000)) >= 0, 'the forged fetch outlived the child');
});

test("a cancelled call's fetch in flight is aborted at once, long before any deadline", async () => {
  const brokers = testBrokers([], { net: { allowCidrs: ['127.0.0.1/32'] } });
  const ac = new AbortController();
  const fetchLine = request(1, 'http_fetch', [JSON.stringify({ url })], { leftMs: 60_000 });
  const waiting = forged(brokers, callerOf('hang', ['net']), { lines: [fetchLine], hang: true }, 60_000, ac.signal);
  const t0 = performance.now();
  while (open.size === 0 && performance.now() - t0 < 5_000) await new Promise((r) => setTimeout(r, 10));
  assert.equal(open.size, 1, 'the fetch never reached the server');
  ac.abort();
  const r = await waiting;
  assert.ok(r.error instanceof SandboxError && r.error.code === 'CANCELLED', String(r.error));
  const closed = await closedWithin(5_000);
  assert.ok(closed >= 0 && closed < 1_000 + LOAD_SLACK_MS, `the fetch was closed after ${closed} ms`);
});

test("revoking the tenant ends a child's fetch in flight with REVOKED, as for a worker, and closes its connection", async () => {
  const run = engine.run(netfetch, { ...OS, profile: 'network', tenant: 'doomed', timeoutMs: 20_000, argv: ['fetch', url] });
  const t0 = performance.now();
  while (open.size === 0 && performance.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 10));
  assert.equal(open.size, 1, 'the fetch never reached the server');
  engine.revoke({ tenant: 'doomed' });
  const r = await run;
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.stdout, `error ${GUEST_ERR.REVOKED}\n`);
  assert.ok((await closedWithin(2_000)) >= 0, 'the revoked fetch kept its connection');
  engine.restore({ tenant: 'doomed' });
});
