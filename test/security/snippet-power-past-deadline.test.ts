// Attack: park a source-lane snippet inside a host power. A JS or Python snippet calls
// `tcp.request` / `fetch` (`membrane.tcp.request` / `membrane.net.fetch`) on a server that
// accepts and never answers, under a 1 s budget. The snippet must end TIMEOUT within the budget
// plus a short grace — never at the broker's own 10 s — and the broker's socket is destroyed.
import assert from 'node:assert/strict';
import dc from 'node:diagnostics_channel';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { tableResolver } from '../net/servers.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOST = '127.0.0.2';
const BUDGET_MS = 1000;
/** The contract is budget + 100 ms (bench/ measures it); the slack is for a loaded 2-core test
 * machine, and the bound stays far below the broker's own 10 s timeout. */
const BOUND_MS = BUDGET_MS + LOAD_SLACK_MS;

let engine: Engine;
let server: Server;
let port = 0;
const accepted: Socket[] = [];
const opened: Socket[] = [];
const onSocket = (m: unknown): void => void opened.push((m as { socket: Socket }).socket);

before(async () => {
  process.env['MEMBRANE_HOME'] = tempDir('membrane-snippet-deadline-');
  dc.subscribe('net.client.socket', onSocket);
  server = createServer({ allowHalfOpen: true }, (s) => {
    accepted.push(s);
    s.on('error', () => {});
    s.on('data', () => {});
  });
  await new Promise<void>((r) => server.listen(0, HOST, r));
  port = (server.address() as AddressInfo).port;
  engine = createEngine({ poolSize: 1, brokers: { net: { allowCidrs: [`${HOST}/32`], resolver: tableResolver({ 'silent.example.test': [HOST] }) } } });
  // Start each lane and its power path once (a refused call), so no test's time includes a cold start.
  await engine.exec({ language: 'js', code: "try { tcp.request('127.0.0.1:1', 'x') } catch (e) { e.code }", profile: 'network' });
  await engine.exec({ language: 'python', code: "import membrane\ntry:\n  membrane.tcp.request('127.0.0.1:1', 'x')\nexcept membrane.MembraneError as e:\n  e.code", profile: 'network' });
});
after(async () => {
  dc.unsubscribe('net.client.socket', onSocket);
  await engine.close();
  for (const s of accepted) s.destroy();
  await new Promise<void>((r) => server.close(() => r()));
});

async function waitFor(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  return cond();
}

/**
 * Wait until the Python lane's pool of pre-booted interpreters is full again (each snippet uses a
 * fresh one): the time measured is then the snippet's, not an interpreter's boot.
 */
async function pythonPoolFull(): Promise<void> {
  const lanes = (engine as unknown as { lanes: { get(language: 'python'): Promise<{ warm(): Promise<void> }> } }).lanes;
  await (await lanes.get('python')).warm();
}

const target = (): string => `silent.example.test:${port}`;
const url = (): string => `http://silent.example.test:${port}/`;

const cases: { label: string; language: 'js' | 'python'; code: () => string }[] = [
  { label: 'JS tcp.request', language: 'js', code: () => `tcp.request(${JSON.stringify(target())}, 'ping')` },
  { label: 'JS fetch', language: 'js', code: () => `(async () => (await fetch(${JSON.stringify(url())})).status)()` },
  { label: 'Python membrane.tcp.request', language: 'python', code: () => `import membrane\nmembrane.tcp.request(${JSON.stringify(target())}, 'ping')` },
  { label: 'Python membrane.net.fetch', language: 'python', code: () => `import membrane\nmembrane.net.fetch(${JSON.stringify(url())})` },
];

for (const c of cases) {
  test(`${c.label} to a server that never answers ends TIMEOUT within the budget and destroys the socket`, async () => {
    if (c.language === 'python') await pythonPoolFull();
    const from = { client: opened.length, server: accepted.length };
    const t0 = performance.now();
    const r = await engine.exec({ language: c.language, code: c.code(), profile: 'network', timeoutMs: BUDGET_MS });
    const ms = performance.now() - t0;
    console.log(`# ${c.label}: ${JSON.stringify(r.error)} after ${ms.toFixed(0)} ms (budget ${BUDGET_MS} ms)`);
    assert.equal(r.ok, false, `${c.label}: ${JSON.stringify(r.result)}`);
    assert.equal(r.error?.code, 'TIMEOUT', `${c.label}: ${JSON.stringify(r.error)}`);
    assert.ok(ms <= BOUND_MS, `${c.label}: ended after ${ms.toFixed(0)} ms, over ${BOUND_MS} ms`);
    assert.ok(accepted.length > from.server, `${c.label}: the request reached the silent server`);
    const ours = opened.slice(from.client);
    assert.ok(ours.length > 0, `${c.label}: the broker's socket was seen`);
    assert.ok(await waitFor(() => ours.every((s) => s.destroyed), 200), `${c.label}: the broker's socket is still open after the snippet ended`);
  });
}
