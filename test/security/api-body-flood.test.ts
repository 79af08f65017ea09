// Attack: a client floods the API with bodies far over the cap, declared or chunked, or sends
// malformed, mistyped and over-specified JSON. The server answers a clear 4xx in the error shape
// and stops reading a flood at the cap: it never buffers (or even waits for) the rest.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { MAX_BODY_BYTES } from '../../src/interfaces/http/body.ts';
import { call, testServer } from '../helpers/http.ts';

const t = await testServer();
const token = t.token('flood', 'compute');
const port = new URL(t.url).port;

interface Flood {
  /** The first line of the answer. */
  statusLine: string;
  answer: string;
  /** Bytes the client managed to write before the server closed the connection. */
  written: number;
  ms: number;
}

/** Write headers, then body bytes as fast as the socket takes them, until the server hangs up. */
function flood(headers: string, limitBytes: number): Promise<Flood> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const s = connect(Number(port), '127.0.0.1');
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let written = 0;
    let answer = '';
    let ended = false;
    const finish = (): void => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ statusLine: answer.split('\r\n')[0] ?? '', answer, written, ms: performance.now() - t0 });
    };
    const timer = setTimeout(() => {
      ended = true;
      s.destroy();
      reject(new Error(`the server kept reading: ${written} bytes written, no hang-up in 20 s`));
    }, 20_000);
    s.on('data', (d) => (answer += d.toString('latin1')));
    s.on('end', finish);
    s.on('close', finish);
    s.on('error', finish);
    s.on('connect', () => {
      s.write(headers);
      const pump = (): void => {
        while (!ended && written < limitBytes) {
          written += chunk.length;
          if (!s.write(chunk)) {
            s.once('drain', pump);
            return;
          }
        }
      };
      pump();
    });
  });
}

const FLOOD = 1024 * 1024 * 1024; // 1 GiB offered

test('a declared 1 GiB body is refused with 413 before it is read, and the connection closed', async (ctx) => {
  const f = await flood(`POST /v1/exec HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${FLOOD}\r\n\r\n`, FLOOD);
  assert.match(f.statusLine, /^HTTP\/1\.1 413 /);
  assert.match(f.answer, /"code":"TOO_LARGE"/);
  ctx.diagnostic(`client wrote ${(f.written / 1048576).toFixed(1)} MiB of 1024 before the hang-up (${f.ms.toFixed(0)} ms)`);
  assert.ok(f.written < 64 * 1024 * 1024, `the client got ${f.written} bytes in before the hang-up`);
});

test('a chunked flood is cut off at the cap: 413 and a hang-up, not 1 GiB read', async (ctx) => {
  const headers = `POST /v1/exec HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
  // One huge chunk: its size line announces 1 GiB, its bytes follow as fast as they go.
  const f = await flood(`${headers}${FLOOD.toString(16)}\r\n`, FLOOD);
  assert.match(f.statusLine, /^HTTP\/1\.1 413 /);
  ctx.diagnostic(`client wrote ${(f.written / 1048576).toFixed(1)} MiB of 1024 before the hang-up (${f.ms.toFixed(0)} ms)`);
  assert.ok(f.written < 64 * 1024 * 1024, `the client got ${f.written} bytes in before the hang-up`);
});

test('an unauthenticated flood is refused at the door (401), whatever its size', async () => {
  const f = await flood(`POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${FLOOD}\r\n\r\n`, FLOOD);
  assert.match(f.statusLine, /^HTTP\/1\.1 401 /);
  assert.ok(f.written < 64 * 1024 * 1024);
});

test('a body just over the JSON cap is 413; one at the cap is read (and judged on its content)', async () => {
  const over = await call(t.url, '/v1/exec', token, 'POST', JSON.stringify({ code: 'x'.repeat(MAX_BODY_BYTES), language: 'js' }));
  assert.equal(over.status, 413);
  assert.equal(over.body.error.code, 'TOO_LARGE');
  const pad = MAX_BODY_BYTES - JSON.stringify({ code: '', language: 'js' }).length;
  const at = await call(t.url, '/v1/exec', token, 'POST', JSON.stringify({ code: ' '.repeat(pad), language: 'js' }));
  assert.notEqual(at.status, 413, at.text);
});

test('malformed JSON, unknown fields, wrong types, a missing field and a wrong content type → clear 4xx', async () => {
  const cases: [unknown, number, RegExp, Record<string, string>?][] = [
    ['{"code": "1", "language":', 400, /not valid JSON/],
    [{ code: '1', language: 'js', extra: true }, 400, /unknown field "extra"/],
    [{ code: 1, language: 'js' }, 400, /^code: .*string/],
    [{ code: '1', language: 'cobol' }, 400, /^language: /],
    [{ language: 'js' }, 400, /^code: /],
    [{ code: '1', language: 'js', timeout_ms: 'soon' }, 400, /^timeout_ms: /],
    [{ code: '1', language: 'js', capability_subset: 'net' }, 400, /^capability_subset: /],
    ['[1,2,3]', 400, /the body/],
    ['code=1', 415, /application\/json/, { 'content-type': 'application/x-www-form-urlencoded' }],
  ];
  for (const [body, status, message, headers] of cases) {
    const r = await call(t.url, '/v1/exec', token, 'POST', body, headers ?? {});
    assert.equal(r.status, status, `${JSON.stringify(body)} → ${r.text}`);
    assert.deepEqual(Object.keys(r.body), ['error']);
    assert.match(r.body.error.message, message, r.text);
    assert.doesNotMatch(r.text, /at \w+ \(|\/work\/|node_modules/, 'no stack or host path');
  }
  const nested = await call(t.url, '/v1/instances', token, 'POST', { id: 'bad id with spaces', module: 'AA==' });
  assert.equal(nested.status, 400);
  assert.match(nested.body.error.message, /^id: /);
  const call2 = await call(t.url, '/v1/instances/x/call', token, 'POST', { export: 'f', args: [{}] });
  assert.ok(call2.status === 404 || call2.status === 400);
});

test('the server still answers after the floods', async () => {
  const r = await call(t.url, '/v1/exec', token, 'POST', { code: '6*7', language: 'js' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.result, 42);
});
