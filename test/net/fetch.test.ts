// guardedFetch behaviour against loopback servers (allowlisted): redirect semantics, headers,
// methods, cancellation, and the batch form's limits.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { NetError, guardedFetch, guardedFetchMany } from '../../src/net/index.ts';
import { httpServer, tableResolver, type TestServer } from './servers.ts';

let server: TestServer;
let inFlight = 0;
let maxInFlight = 0;
const seen: { method: string; url: string; body: string; headers: Record<string, string | string[] | undefined> }[] = [];

before(async () => {
  server = await httpServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, body, headers: req.headers });
      const u = new URL(req.url!, 'http://x');
      const status = Number(u.searchParams.get('status') ?? 0);
      if (u.pathname === '/redirect') return res.writeHead(status, { location: u.searchParams.get('to')! }).end();
      if (u.pathname === '/loop') return res.writeHead(302, { location: `/loop?n=${Number(u.searchParams.get('n') ?? 0) + 1}` }).end();
      if (u.pathname === '/slow') {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        return setTimeout(() => {
          inFlight--;
          res.end('slow');
        }, 30);
      }
      res.writeHead(200, { 'X-Mixed-Case': 'v', 'set-cookie': ['a=1', 'b=2'] }).end(`${req.method} ${u.pathname} ${body}`);
    });
  });
});
after(() => server.close());

const resolver = tableResolver({ 'a.example.test': ['127.0.0.1'], 'b.example.test': ['127.0.0.1'] });
const opts = { resolver, allowCidrs: ['127.0.0.1/32'] };
const url = (path: string, host = 'a.example.test'): string => `http://${host}:${server.port}${path}`;
const text = (b: Uint8Array): string => Buffer.from(b).toString();

test('response headers come back as a plain object with lowercased names', async () => {
  const r = await guardedFetch({ url: url('/plain') }, opts);
  assert.equal(r.headers['x-mixed-case'], 'v');
  assert.equal(r.headers['set-cookie'], 'a=1, b=2');
  assert.equal(Object.getPrototypeOf(r.headers), Object.prototype);
  assert.ok(r.body instanceof Uint8Array);
});

test('303 turns POST into a body-less GET; 307 and 308 keep the method and body', async () => {
  const post = { method: 'POST', body: 'payload', headers: { 'content-type': 'text/plain' } };
  const r303 = await guardedFetch({ url: url(`/redirect?status=303&to=/done`), ...post }, opts);
  assert.equal(text(r303.body), 'GET /done ');
  assert.equal(seen.at(-1)!.headers['content-type'], undefined);
  for (const status of [307, 308]) {
    const r = await guardedFetch({ url: url(`/redirect?status=${status}&to=/done`), ...post }, opts);
    assert.equal(text(r.body), 'POST /done payload', String(status));
  }
  const r301 = await guardedFetch({ url: url(`/redirect?status=301&to=/done`), ...post }, opts);
  assert.equal(text(r301.body), 'GET /done ');
  const put = await guardedFetch({ url: url(`/redirect?status=302&to=/done`), method: 'PUT', body: 'x' }, opts);
  assert.equal(text(put.body), 'PUT /done x');
  assert.equal(put.url, url('/done'));
});

test('credentials do not follow a redirect to another origin', async () => {
  const headers = { authorization: 'Bearer t', cookie: 'c=1', 'x-keep': 'k' };
  await guardedFetch({ url: url(`/redirect?status=302&to=${encodeURIComponent(url('/same'))}`), headers }, opts);
  assert.equal(seen.at(-1)!.headers['authorization'], 'Bearer t');
  await guardedFetch({ url: url(`/redirect?status=302&to=${encodeURIComponent(url('/other', 'b.example.test'))}`), headers }, opts);
  assert.equal(seen.at(-1)!.headers['authorization'], undefined);
  assert.equal(seen.at(-1)!.headers['cookie'], undefined);
  assert.equal(seen.at(-1)!.headers['x-keep'], 'k');
});

test('at most 5 redirects are followed (the 6th is TOO_LARGE); maxRedirects 0 refuses any redirect', async () => {
  await assert.rejects(guardedFetch({ url: url('/loop') }, opts), (e: unknown) => e instanceof NetError && e.code === 'TOO_LARGE');
  const loops = seen.filter((s) => s.url.startsWith('/loop')).length;
  assert.equal(loops, 6);
  const raw = await guardedFetch({ url: url('/redirect?status=302&to=/x') }, { ...opts, maxRedirects: 0 }).catch((e: unknown) => e);
  assert.ok(raw instanceof NetError && raw.code === 'TOO_LARGE');
});

test('a redirect to another scheme or an unparseable location is refused', async () => {
  await assert.rejects(guardedFetch({ url: url(`/redirect?status=302&to=${encodeURIComponent('file:///etc/passwd')}`) }, opts),
    (e: unknown) => e instanceof NetError && e.code === 'DENIED');
  await assert.rejects(guardedFetch({ url: url(`/redirect?status=302&to=${encodeURIComponent('http://[::1')}`) }, opts),
    (e: unknown) => e instanceof NetError && e.code === 'UNAVAILABLE');
});

test('methods: the usual ones pass, CONNECT and TRACE are DENIED, garbage is INVALID; GET has no body', async () => {
  assert.equal(text((await guardedFetch({ url: url('/m'), method: 'delete' }, opts)).body), 'DELETE /m ');
  assert.equal((await guardedFetch({ url: url('/m'), method: 'HEAD' }, opts)).body.byteLength, 0);
  for (const [method, code] of [['CONNECT', 'DENIED'], ['TRACE', 'DENIED'], ['GE T', 'INVALID']] as const) {
    await assert.rejects(guardedFetch({ url: url('/m'), method }, opts), (e: unknown) => e instanceof NetError && e.code === code, method);
  }
  await assert.rejects(guardedFetch({ url: url('/m'), body: 'x' }, opts), (e: unknown) => e instanceof NetError && e.code === 'INVALID');
});

test('a caller cancel is UNAVAILABLE; a connection refused is UNAVAILABLE', async () => {
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 5);
  await assert.rejects(guardedFetch({ url: url('/slow') }, { ...opts, signal: ac.signal }), (e: unknown) => e instanceof NetError && e.code === 'UNAVAILABLE');
  const closed = await httpServer(() => {});
  const port = closed.port;
  await closed.close();
  await assert.rejects(guardedFetch({ url: `http://a.example.test:${port}/` }, opts),
    (e: unknown) => e instanceof NetError && e.code === 'UNAVAILABLE' && !/127\.0\.0\.1/.test(e.message));
});

test('guardedFetchMany: one result per request, in order, each item its own outcome', async () => {
  const results = await guardedFetchMany([{ url: url('/one') }, { url: 'http://169.254.169.254/' }, { url: 'nope' }, { url: url('/two') }], opts);
  assert.deepEqual(results.map((r) => (r.ok ? text(r.response.body) : r.error.code)), ['GET /one ', 'DENIED', 'INVALID', 'GET /two ']);
});

test('guardedFetchMany: more than 64 requests is TOO_LARGE; at most 16 run at once', async () => {
  await assert.rejects(guardedFetchMany(Array.from({ length: 65 }, () => ({ url: url('/x') })), opts),
    (e: unknown) => e instanceof NetError && e.code === 'TOO_LARGE');
  // A /slow request an earlier test abandoned is still held by the server for up to 30 ms: let it end first.
  for (let i = 0; i < 100 && inFlight > 0; i++) await new Promise((r) => setTimeout(r, 5));
  maxInFlight = 0;
  const results = await guardedFetchMany(Array.from({ length: 40 }, () => ({ url: url('/slow') })), opts);
  assert.ok(results.every((r) => r.ok));
  assert.ok(maxInFlight <= 16 && maxInFlight > 1, `max in flight ${maxInFlight}`);
  maxInFlight = 0;
  await guardedFetchMany(Array.from({ length: 8 }, () => ({ url: url('/slow') })), { ...opts, concurrency: 2 });
  assert.ok(maxInFlight <= 2, `max in flight ${maxInFlight}`);
});

test('guardedFetchMany: each request has its own deadline', async () => {
  const results = await guardedFetchMany([{ url: url('/slow') }, { url: url('/plain') }], { ...opts, perRequestTimeoutMs: 10 });
  assert.equal(results[0]!.ok ? 'ok' : results[0]!.error.code, 'TIMEOUT');
});

test('an allowlisted IPv6 literal and a name resolving to IPv6 are fetched from the pinned address', async () => {
  const v6 = await httpServer((req, res) => res.end(`v6 ${req.headers.host}`), '::1');
  try {
    const v6opts = { allowCidrs: ['::1/128'], resolver: tableResolver({ 'six.example.test': ['::1'] }) };
    assert.equal(text((await guardedFetch({ url: `http://[::1]:${v6.port}/` }, v6opts)).body), `v6 [::1]:${v6.port}`);
    assert.equal(text((await guardedFetch({ url: `http://six.example.test:${v6.port}/` }, v6opts)).body), `v6 six.example.test:${v6.port}`);
    await assert.rejects(guardedFetch({ url: `http://[::1]:${v6.port}/` }, opts), (e: unknown) => e instanceof NetError && e.code === 'DENIED');
  } finally {
    await v6.close();
  }
});
