// Attack: a component granted `net` opens wasi:sockets TCP connections to what the network guard
// exists to keep it from — the metadata address, a 10/8 host, loopback (literal, `localhost`, a
// name that resolves there) without the operator's allowlist — or to a stand-in address of
// 198.18.0.0/15 it never looked up, hoping it stands for something. Each connection is one
// tcp_request through the guard: refused (`access-denied` on the stream), audited with its
// target, and the refused address never sees a connection; an answer past the broker's cap is
// refused whole, and one that never ends stops at the broker's timeout.
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import type { Engine } from '../../src/index.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { component } from '../helpers/components.ts';
import { testEngine } from '../helpers/engine.ts';
import { tableResolver } from '../net/servers.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-component-socket-ssrf-');
const ALLOWED = '127.0.0.2';
const resolver = tableResolver({ 'ok.example.test': [ALLOWED], 'inside.example.test': ['127.0.0.1'], 'mixed.example.test': [ALLOWED, '10.9.9.9'] });
const engine: Engine = testEngine({ poolSize: 1, brokers: { net: { allowCidrs: [`${ALLOWED}/32`], resolver, timeoutMs: 500 } } });
const hits = { allowed: 0, loopback: 0 };
let allowed: Server;
let loopback: Server;
let port = 0;

const open = new Set<Socket>();
const listen = (host: string, p: number, count: () => void): Promise<Server> =>
  new Promise((resolve) => {
    const s = createServer({ allowHalfOpen: true }, (c) => {
      count();
      open.add(c);
      c.on('close', () => open.delete(c));
      c.on('error', () => {});
      let got = '';
      c.on('data', (d: Buffer) => (got += d.toString()));
      // "big": an answer twice the broker's 1 MiB cap.
      c.on('end', () => {
        if (got !== 'hang') c.end(got === 'big' ? Buffer.alloc(2 << 20, 0x62) : `hello from ${host}`); // "hang": never closes
      });
    });
    s.listen(p, host, () => resolve(s));
  });

before(async () => {
  allowed = await listen(ALLOWED, 0, () => hits.allowed++);
  port = (allowed.address() as { port: number }).port;
  loopback = await listen('127.0.0.1', port, () => hits.loopback++);
});
after(async () => {
  for (const c of open) c.destroy();
  await new Promise((r) => allowed.close(r));
  await new Promise((r) => loopback.close(r));
});

const connect = (name: string, p = port, send = 'x'): Promise<{ stdout: string }> => engine.run(component('tcp-client'), { profile: 'network', tenant: 'mallory', argv: [name, String(p), send] });

test('metadata, 10/8, loopback, localhost, a name resolving inside and a mixed answer: access-denied, audited, never connected', async () => {
  const ok = await connect('ok.example.test');
  assert.equal(ok.stdout, `address 198.18.0.1\nhello from ${ALLOWED}`);
  const refused = ['169.254.169.254', '10.0.0.1', '127.0.0.1', 'localhost', 'inside.example.test', 'mixed.example.test', 'metadata.google.internal'];
  for (const name of refused) {
    const r = await connect(name, name === '169.254.169.254' ? 80 : port);
    assert.match(r.stdout, /^address [0-9.]+\nstream error: access-denied: the network guard refused the destination\n$/, name);
  }
  assert.equal(hits.loopback, 0);
  const log = AuditLog.open();
  try {
    const denied = log.tail({ kind: 'denied', limit: 50 }).filter((e) => e.tenant === 'mallory' && e.detail['op'] === 'tcp_request');
    for (const name of refused) assert.ok(denied.some((e) => String(e.detail['target']).startsWith(`${name}:`)), `no audit record for ${name}`);
  } finally {
    log.close();
  }
});

test('a stand-in address the component never looked up stands for nothing: the guard refuses the literal', async () => {
  const r = await connect('198.18.0.5');
  assert.equal(r.stdout, 'address 198.18.0.5\nstream error: access-denied: the network guard refused the destination\n');
  assert.equal(hits.loopback, 0);
});

test('an answer past the broker cap (1 MiB) is refused whole: nothing of it reaches the component', async () => {
  const r = await connect('ok.example.test', port, 'big');
  assert.equal(r.stdout, 'address 198.18.0.1\nstream error: out-of-memory: the answer is over the broker cap\n');
});

test('a peer that never closes: the exchange ends at the broker\'s timeout (timeout), and the run goes on', async () => {
  const t0 = performance.now();
  const r = await connect('ok.example.test', port, 'hang');
  assert.equal(r.stdout, 'address 198.18.0.1\nstream error: timeout: the exchange did not end within its deadline\n');
  assert.ok(performance.now() - t0 < 5_000);
});
