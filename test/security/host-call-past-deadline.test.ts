// Attack: park the guest inside a host call. A guest asks a broker to talk to a server that
// accepts and never answers (TCP, UDP, TLS that never completes its handshake, HTTP, a batch of
// 64 such URLs, an LLM endpoint) under a 1 s budget. The call must end TIMEOUT within the budget
// plus a short grace — never at the broker's own 10/15/60 s timeout — and the abort must reach
// the socket: every socket the call opened is destroyed, and the silent server sees its peer go.
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import dc from 'node:diagnostics_channel';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { tableResolver } from '../net/servers.ts';

const guest = new Uint8Array(readFileSync(new URL('../fixtures/c/netfetch.wasm', import.meta.url)));
const HOST = '127.0.0.2';
const BUDGET_MS = 1000;
/** The contract is budget + 100 ms; the slack is for a loaded 2-core test machine. */
const BOUND_MS = 1500;

/** A TCP server that accepts and never writes a byte; it records each connection whose peer went away. */
interface Silent {
  readonly port: number;
  readonly accepted: Socket[];
  readonly gone: Set<Socket>;
  close(): Promise<void>;
}

async function silentTcp(): Promise<Silent> {
  const accepted: Socket[] = [];
  const gone = new Set<Socket>();
  const server: Server = createServer({ allowHalfOpen: true }, (s) => {
    accepted.push(s);
    s.on('error', () => gone.add(s));
    s.on('data', () => {});
    s.on('end', () => gone.add(s));
    s.on('close', () => gone.add(s));
  });
  await new Promise<void>((r) => server.listen(0, HOST, r));
  return {
    port: (server.address() as AddressInfo).port,
    accepted,
    gone,
    close: () =>
      new Promise<void>((r) => {
        for (const s of accepted) s.destroy();
        server.close(() => r());
      }),
  };
}

let engine: Engine;
let tcp: Silent;
/** Every TCP socket this process opened (Node's `net.client.socket` channel): the brokers' sockets among them. */
const opened: Socket[] = [];
const onSocket = (m: unknown): void => void opened.push((m as { socket: Socket }).socket);

before(async () => {
  process.env['MEMBRANE_HOME'] = mkdtempSync(join(tmpdir(), 'membrane-host-call-deadline-'));
  dc.subscribe('net.client.socket', onSocket);
  tcp = await silentTcp();
  const resolver = tableResolver({ 'silent.example.test': [HOST] });
  engine = createEngine({
    poolSize: 2,
    brokers: {
      net: { allowCidrs: [`${HOST}/32`], resolver },
      llm: { baseUrl: `http://${HOST}:${tcp.port}/v1`, apiKey: 'k', model: 'm' },
    },
  });
  // Compile and instrument the guest once, so no test's time includes that.
  await engine.run(guest, { profile: 'network', argv: ['tcp', '127.0.0.1:1', 'x'] });
});
after(async () => {
  dc.unsubscribe('net.client.socket', onSocket);
  await engine.close();
  await tcp.close();
});

async function waitFor(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  return cond();
}

/** Run the guest with `argv` under a 1 s budget: it ends TIMEOUT in time; the measured time is printed. */
async function timesOut(label: string, argv: string[]): Promise<number> {
  const t0 = performance.now();
  const r = await engine.run(guest, { profile: 'network', timeoutMs: BUDGET_MS, argv });
  const ms = performance.now() - t0;
  console.log(`# ${label}: TIMEOUT after ${ms.toFixed(0)} ms (budget ${BUDGET_MS} ms)`);
  assert.equal(r.ok, false, `${label}: ${r.stdout}`);
  assert.equal(r.error?.code, 'TIMEOUT', `${label}: ${JSON.stringify(r.error)}`);
  assert.ok(ms <= BOUND_MS, `${label}: ended after ${ms.toFixed(0)} ms, over ${BOUND_MS} ms`);
  return ms;
}

/**
 * The abort reached the sockets: every socket opened since `from` is destroyed right after the
 * call ended, and (unless the request half-closes by design, as tcp_request does) the server saw
 * each of its peers go away.
 */
async function socketsClosed(label: string, server: Silent, from: { client: number; server: number }, peerSeen = true): Promise<void> {
  const theirs = server.accepted.slice(from.server);
  const ours = opened.slice(from.client);
  assert.ok(theirs.length > 0, `${label}: the request reached the silent server`);
  assert.ok(ours.length > 0, `${label}: the broker's sockets were seen`);
  assert.ok(await waitFor(() => ours.every((s) => s.destroyed), 100), `${label}: ${ours.filter((s) => !s.destroyed).length} broker socket(s) still open after the call ended`);
  if (peerSeen) assert.ok(await waitFor(() => theirs.every((s) => server.gone.has(s)), 1000), `${label}: the server did not see its peer go`);
}

const mark = (): { client: number; server: number } => ({ client: opened.length, server: tcp.accepted.length });

for (const [label, mode] of [
  ['tcp_request', 'tcp'],
  ['tls_request (handshake never completes)', 'tls'],
] as const) {
  test(`${label} to a server that never answers ends TIMEOUT within the budget and closes the socket`, async () => {
    const from = mark();
    await timesOut(label, [mode, `silent.example.test:${tcp.port}`, 'ping']);
    await socketsClosed(label, tcp, from, mode !== 'tcp');
  });
}

test('udp_request to a port that never replies ends TIMEOUT within the budget', async () => {
  const sock = createSocket('udp4');
  let seen = 0;
  sock.on('message', () => seen++);
  await new Promise<void>((r) => sock.bind(0, HOST, r));
  try {
    await timesOut('udp_request', ['udp', `silent.example.test:${sock.address().port}`, 'ping']);
    assert.equal(seen, 1, 'the datagram reached the silent server');
  } finally {
    sock.close();
  }
});

test('http_fetch to a server that never answers ends TIMEOUT within the budget and closes the socket', async () => {
  const from = mark();
  await timesOut('http_fetch', ['fetch', `http://silent.example.test:${tcp.port}/`]);
  await socketsClosed('http_fetch', tcp, from);
});

test('browse_fetch to a server that never answers ends TIMEOUT within the budget', async () => {
  const from = mark();
  await timesOut('browse_fetch', ['browse', `http://silent.example.test:${tcp.port}/`]);
  await socketsClosed('browse_fetch', tcp, from);
});

test('http_fetch_many with 64 silent URLs ends TIMEOUT within the budget (not 4 × 15 s) and closes every socket', async () => {
  const from = mark();
  const urls = Array.from({ length: 64 }, (_, i) => `http://silent.example.test:${tcp.port}/${i}`);
  await timesOut('http_fetch_many x64', ['many', ...urls]);
  await socketsClosed('http_fetch_many', tcp, from);
});

test('llm_complete to an endpoint that never answers ends TIMEOUT within the budget and closes the socket', async () => {
  const from = mark();
  await timesOut('llm_complete', ['llm', '{"messages":[{"role":"user","content":"hi"}]}']);
  await socketsClosed('llm_complete', tcp, from);
});

test('after a host call timed out, the engine runs the next guest normally', async () => {
  const r = await engine.run(guest, { profile: 'network', timeoutMs: BUDGET_MS, argv: ['tcp', `127.0.0.1:1`, 'x'] });
  assert.equal(r.ok, true);
  assert.equal(r.stdout, 'error -1\n');
});
