// Attack: make `membrane mcp` (stdio) hang on exit. Shutdown waits for every request still
// unanswered, up to 75 s; a request the client cancelled (`notifications/cancelled`) is never
// answered — the protocol says so and the SDK drops its result — so one cancelled call kept the
// process alive for the whole grace period after stdin closed. A cancelled request is no longer
// waited for: the server closes at once, and the cancelled call gets no response.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { serveStdio } from '../../src/interfaces/mcp/stdio.ts';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';

const engine = testEngine({ poolSize: 1 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a cancelled stdio call does not hold shutdown for the grace period', async () => {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  let text = '';
  stdout.on('data', (d: Buffer) => void (text += d.toString()));
  const h = await serveStdio({ engine, tenant: 'stdio-cancel', profile: 'compute', hostCaps: [] }, { stdin, stdout });
  const send = (m: unknown) => stdin.write(`${JSON.stringify(m)}\n`);
  send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'attacker', version: '1' } } });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'sandbox_execute', arguments: { language: 'js', code: '6 * 7' } } });
  while (!text.includes('"id":1')) await sleep(20);
  send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'sandbox_execute', arguments: { language: 'js', code: 'while (true) {}', timeout_ms: 20_000 } } });
  await sleep(500);
  send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'stop' } });
  await sleep(200);
  const t0 = performance.now();
  stdin.end();
  await h.done;
  const ms = performance.now() - t0;
  assert.ok(ms < 2_000 + LOAD_SLACK_MS, `shutdown took ${ms.toFixed(0)} ms`);
  const ids = text.split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { id?: unknown }).id);
  assert.deepEqual(ids, [0, 1], 'the answered calls were written; the cancelled one gets no response');
});
