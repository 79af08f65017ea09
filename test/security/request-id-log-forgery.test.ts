// Attack: a client sends an X-Request-Id built to forge or smear log lines and headers — quotes
// and JSON fragments, spaces, a tab, a 129-character id, two ids at once. None is kept: each
// request gets a fresh UUID instead, in its answer and on its log line, and the hostile text
// appears in no log line (REQUEST_ID_PATTERN: 1-128 characters of [A-Za-z0-9._:@/+=-]).
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { REQUEST_ID_PATTERN } from '../../src/interfaces/http/log.ts';
import { testServer } from '../helpers/http.ts';

const t = await testServer();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** One raw HTTP/1.1 request (so the header goes out byte for byte); the answer's head. */
function raw(headerLines: string[]): Promise<string> {
  const u = new URL(t.url);
  return new Promise((resolve, reject) => {
    const s = connect(Number(u.port), u.hostname, () => s.write(`GET /health HTTP/1.1\r\nhost: x\r\n${headerLines.map((h) => `${h}\r\n`).join('')}connection: close\r\n\r\n`));
    let got = '';
    s.setEncoding('latin1');
    s.on('data', (d: string) => (got += d));
    s.on('end', () => resolve(got));
    s.on('error', reject);
    s.setTimeout(10_000, () => s.destroy(new Error('no answer')));
  });
}

const HOSTILE = [
  'x","msg":"admin token created","level":30,"y":"',
  'two words',
  'tab\there',
  'a'.repeat(129),
  '',
  '../../etc/passwd%0a',
];

test('hostile X-Request-Id values are replaced by a UUID and never logged', async () => {
  for (const id of HOSTILE) {
    const head = await raw([`x-request-id: ${id}`]);
    assert.match(head, /^HTTP\/1\.1 200 /, JSON.stringify(id));
    const echoed = /\r\nx-request-id: ([^\r]*)\r\n/i.exec(head)?.[1] ?? '';
    assert.match(echoed, UUID, `${JSON.stringify(id)} was answered with ${JSON.stringify(echoed)}`);
    assert.ok(t.logs.some((l) => JSON.parse(l).requestId === echoed), 'the request line carries the replacement');
  }
  const all = t.logs.join('');
  assert.ok(!all.includes('admin token created'), 'a forged message reached the log');
  assert.ok(!all.includes('a'.repeat(129)));
  assert.ok(!all.includes('two words') && !all.includes('etc/passwd'));
});

test('two X-Request-Id headers at once are not merged into one id', async () => {
  const head = await raw(['x-request-id: first', 'x-request-id: second']);
  const echoed = /\r\nx-request-id: ([^\r]*)\r\n/i.exec(head)?.[1] ?? '';
  assert.match(echoed, UUID);
});

test('the pattern admits ordinary trace ids and nothing that can break a line or a header', () => {
  for (const ok of ['0af7651916cd43dd8448eb211c80319c', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'a'.repeat(128), 'req:1@host/x+y=']) assert.ok(REQUEST_ID_PATTERN.test(ok), ok);
  for (const bad of ['', ' ', 'a b', 'a"b', 'a\nb', 'a\rb', 'a\u0000b', 'é', 'a,b', 'a;b', 'a'.repeat(129)]) assert.ok(!REQUEST_ID_PATTERN.test(bad), JSON.stringify(bad));
});
