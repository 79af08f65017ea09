// SSRF through the network guard (DESIGN §5): every test is an attack a guest's URL could make.
// Only loopback servers started here are ever contacted, and only through an explicit allowlist
// and an injected resolver. For each refusal: the guard says DENIED, the trap server's connection
// count stays 0, and no TCP socket is opened at all (net.client.socket diagnostics channel).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { NetError, guardedFetch, type FetchOptions, type FetchRequest } from '../../src/net/index.ts';
import { httpServer, httpsServer, makeTestPki, outgoingSockets, tableResolver, type TestServer } from '../net/servers.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';

const ALLOW_1 = ['127.0.0.1/32'];
let trap: TestServer;

before(async () => {
  trap = await httpServer((_req, res) => res.end('you should never see this'));
});
after(() => trap.close());

async function outcome(request: FetchRequest, options: FetchOptions): Promise<{ code: string; sockets: number }> {
  let code = 'OK';
  const sockets = await outgoingSockets(async () => {
    try {
      await guardedFetch(request, options);
    } catch (err) {
      assert.ok(err instanceof NetError, String(err));
      code = err.code;
    }
  });
  return { code, sockets };
}

async function assertRefusedWithoutConnecting(url: string, options: FetchOptions = {}): Promise<void> {
  const resolver = options.resolver ?? tableResolver({});
  const r = await outcome({ url }, { resolver, ...options });
  assert.deepEqual(r, { code: 'DENIED', sockets: 0 }, url);
  assert.equal(trap.connections, 0, `${url} reached the trap server`);
}

test('cloud metadata at http://169.254.169.254/latest/meta-data/ is refused', async () => {
  await assertRefusedWithoutConnecting('http://169.254.169.254/latest/meta-data/');
  await assertRefusedWithoutConnecting('http://[::ffff:169.254.169.254]/latest/meta-data/');
  await assertRefusedWithoutConnecting('http://[64:ff9b::a9fe:a9fe]/latest/meta-data/');
});

test('loopback written as an IPv4-mapped IPv6 literal is refused', async () => {
  await assertRefusedWithoutConnecting(`http://[::ffff:127.0.0.1]:${trap.port}/`);
  await assertRefusedWithoutConnecting(`http://[::ffff:7f00:1]:${trap.port}/`);
  await assertRefusedWithoutConnecting(`http://[::1]:${trap.port}/`);
});

test('obfuscated loopback literals (decimal, hex, octal, short forms) are refused', async () => {
  for (const host of ['2130706433', '0x7f.1', '0177.0.0.1', '127.1', '0x7f000001', '127.0.0.1.', '%31%32%37.0.0.1', '0.0.0.0', '0']) {
    await assertRefusedWithoutConnecting(`http://${host}:${trap.port}/`);
  }
});

test('localhost and metadata names are refused without resolving them', async () => {
  const resolver = tableResolver({ localhost: ['127.0.0.1'], 'metadata.google.internal': ['169.254.169.254'] });
  await assertRefusedWithoutConnecting(`http://localhost:${trap.port}/`, { resolver });
  await assertRefusedWithoutConnecting('http://metadata.google.internal/computeMetadata/v1/', { resolver });
  await assertRefusedWithoutConnecting('http://metadata/', { resolver });
  await assertRefusedWithoutConnecting(`http://LOCALHOST.:${trap.port}/`, { resolver, allowCidrs: ALLOW_1 });
  assert.deepEqual(resolver.calls, {});
});

test('a public-looking name that resolves to loopback or metadata is refused', async () => {
  const resolver = tableResolver({
    'innocent.example.com': ['127.0.0.1'],
    'dual.example.com': ['93.184.216.34', '127.0.0.1'],
    'meta.example.com': ['169.254.169.254'],
    'ula.example.com': ['fd00::2'],
  });
  for (const name of ['innocent.example.com', 'dual.example.com', 'meta.example.com', 'ula.example.com']) {
    await assertRefusedWithoutConnecting(`http://${name}:${trap.port}/`, { resolver });
  }
});

test('a name that does not resolve is refused', async () => {
  await assertRefusedWithoutConnecting(`http://nowhere.example.com:${trap.port}/`, { resolver: tableResolver({}) });
});

test('an allowed loopback server works (allowCidrs 127.0.0.1/32), with Host kept as the name', async () => {
  const server = await httpServer((req, res) => res.end(`hello ${req.headers.host}`));
  try {
    const resolver = tableResolver({ 'api.example.test': ['127.0.0.1'] });
    const r = await guardedFetch({ url: `http://api.example.test:${server.port}/hello?x=1` }, { resolver, allowCidrs: ALLOW_1 });
    assert.equal(r.status, 200);
    assert.equal(Buffer.from(r.body).toString(), `hello api.example.test:${server.port}`);
    assert.deepEqual(server.requests, [`GET /hello?x=1 api.example.test:${server.port}`]);
    assert.deepEqual(resolver.calls, { 'api.example.test': 1 });
  } finally {
    await server.close();
  }
});

test('redirect to a private address is refused at the hop after an allowed first hop', async () => {
  // The first hop's server is on 127.0.0.2, the only allowed address; the trap is on 127.0.0.1.
  const targets = [`http://127.0.0.1:${trap.port}/`, 'http://169.254.169.254/latest/meta-data/', `http://[::ffff:127.0.0.1]:${trap.port}/`,
    `http://2130706433:${trap.port}/`, `http://inside.example.com:${trap.port}/`, 'http://metadata.google.internal/'];
  const first = await httpServer((req, res) => {
    res.writeHead(302, { location: targets[Number(req.url!.slice(1))]! }).end();
  }, '127.0.0.2');
  try {
    for (const [i, target] of targets.entries()) {
      const resolver = tableResolver({ 'public.example.com': ['127.0.0.2'], 'inside.example.com': ['127.0.0.1'] });
      const r = await outcome({ url: `http://public.example.com:${first.port}/${i}` }, { resolver, allowCidrs: ['127.0.0.2/32'] });
      assert.deepEqual(r, { code: 'DENIED', sockets: 1 }, target);
    }
    assert.equal(first.connections, targets.length);
    assert.equal(trap.connections, 0);
  } finally {
    await first.close();
  }
});

test('DNS rebinding: a name that re-resolves to a refused address is never connected to', async () => {
  const good = await httpServer((req, res) => {
    if (req.url === '/again') res.writeHead(302, { location: '/final' }).end();
    else res.end('pinned');
  });
  // The refused twin listens on the same port, on 127.0.0.2.
  const twin = await httpServer((_req, res) => res.end('rebound'), '127.0.0.2', good.port);
  try {
    let calls = 0;
    const resolver = async (): Promise<{ address: string; family: number }[]> => [{ address: calls++ === 0 ? '127.0.0.1' : '127.0.0.2', family: 4 }];
    const r = await guardedFetch({ url: `http://rebind.example.com:${good.port}/` }, { resolver, allowCidrs: ALLOW_1 });
    assert.equal(Buffer.from(r.body).toString(), 'pinned');
    assert.equal(calls, 1, 'resolved exactly once for one hop');

    calls = 0;
    const hop = await outcome({ url: `http://rebind.example.com:${good.port}/again` }, { resolver, allowCidrs: ALLOW_1 });
    assert.deepEqual(hop, { code: 'DENIED', sockets: 1 }, 'the second hop re-resolved, saw the refused address, stopped');
    assert.equal(calls, 2);
    assert.equal(twin.connections, 0, 'the refused address never saw a connection');
    assert.equal(good.connections, 2);
  } finally {
    await twin.close();
    await good.close();
  }
});

test('a 10 MB body is cut at the 1 MiB cap with TOO_LARGE', async () => {
  let finished = 0;
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const server = await httpServer((req, res) => {
    if (req.url === '/declared') res.setHeader('content-length', String(10 * 1024 * 1024));
    let sent = 0;
    const pump = (): void => {
      while (sent < 10 * 1024 * 1024) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end(() => finished++);
    };
    res.on('error', () => {});
    pump();
  });
  try {
    const resolver = tableResolver({ 'big.example.com': ['127.0.0.1'] });
    for (const path of ['/chunked', '/declared']) {
      await assert.rejects(
        guardedFetch({ url: `http://big.example.com:${server.port}${path}` }, { resolver, allowCidrs: ALLOW_1 }),
        (e: unknown) => e instanceof NetError && e.code === 'TOO_LARGE',
        path,
      );
    }
    assert.equal(finished, 0, 'the server never got to send all 10 MB');
    const small = await guardedFetch({ url: `http://big.example.com:${server.port}/chunked` }, { resolver, allowCidrs: ALLOW_1, maxBodyBytes: 20 * 1024 * 1024 });
    assert.equal(small.body.byteLength, 10 * 1024 * 1024, 'a raised cap reads it all');
  } finally {
    await server.close();
  }
});

test('a slow server hits TIMEOUT (headers never come, or the body drips)', async () => {
  const server = await httpServer((req, res) => {
    if (req.url === '/drip') {
      res.writeHead(200);
      const t = setInterval(() => res.write('x'), 50);
      res.on('close', () => clearInterval(t));
    }
  });
  try {
    const resolver = tableResolver({ 'slow.example.com': ['127.0.0.1'] });
    for (const path of ['/silent', '/drip']) {
      const t0 = performance.now();
      await assert.rejects(
        guardedFetch({ url: `http://slow.example.com:${server.port}${path}` }, { resolver, allowCidrs: ALLOW_1, timeoutMs: 300 }),
        (e: unknown) => e instanceof NetError && e.code === 'TIMEOUT',
        path,
      );
      assert.ok(performance.now() - t0 < 300 + LOAD_SLACK_MS, `${path} took ${performance.now() - t0} ms`);
    }
  } finally {
    await server.close();
  }
});

const pki = makeTestPki();
after(() => pki.dispose());

test('https to a pinned loopback server verifies the certificate and sends SNI', async () => {
  const server = await httpsServer(pki.leaf('good.example.test'), (req, res) => res.end(`tls ${req.headers.host}`));
  try {
    const resolver = tableResolver({ 'good.example.test': ['127.0.0.1'] });
    const r = await guardedFetch({ url: `https://good.example.test:${server.port}/` }, { resolver, allowCidrs: ALLOW_1, ca: pki.ca });
    assert.equal(Buffer.from(r.body).toString(), `tls good.example.test:${server.port}`);
    assert.deepEqual(server.servernames, ['good.example.test']);
  } finally {
    await server.close();
  }
});

test('https to a server whose certificate names another host is refused (UNAVAILABLE, no request sent)', async () => {
  const server = await httpsServer(pki.leaf('good.example.test'), (_req, res) => res.end('should not be read'));
  try {
    const resolver = tableResolver({ 'evil.example.test': ['127.0.0.1'], 'good.example.test': ['127.0.0.1'] });
    const options = { resolver, allowCidrs: ALLOW_1, ca: pki.ca };
    await assert.rejects(guardedFetch({ url: `https://evil.example.test:${server.port}/` }, options),
      (e: unknown) => e instanceof NetError && e.code === 'UNAVAILABLE' && /certificate/.test(e.message));
    // Untrusted chain: without the test CA the same good certificate does not verify either.
    await assert.rejects(guardedFetch({ url: `https://good.example.test:${server.port}/` }, { resolver, allowCidrs: ALLOW_1 }),
      (e: unknown) => e instanceof NetError && e.code === 'UNAVAILABLE' && /certificate/.test(e.message));
    // An IP literal needs a certificate for the IP.
    await assert.rejects(guardedFetch({ url: `https://127.0.0.1:${server.port}/` }, options),
      (e: unknown) => e instanceof NetError && e.code === 'UNAVAILABLE');
    assert.deepEqual(server.requests, []);
  } finally {
    await server.close();
  }
});

test('forbidden request headers and an oversized request body are refused before connecting', async () => {
  const resolver = tableResolver({ 'api.example.com': ['127.0.0.1'] });
  const url = `http://api.example.com:${trap.port}/`;
  for (const name of ['Host', 'connection', 'Transfer-Encoding', 'Proxy-Authorization', 'content-length', 'upgrade', 'TE']) {
    const r = await outcome({ url, headers: { [name]: 'x' } }, { resolver, allowCidrs: ALLOW_1 });
    assert.deepEqual(r, { code: 'DENIED', sockets: 0 }, name);
  }
  const smuggle = await outcome({ url, headers: { 'x-a': 'b\r\nHost: evil' } }, { resolver, allowCidrs: ALLOW_1 });
  assert.deepEqual(smuggle, { code: 'INVALID', sockets: 0 });
  const big = await outcome({ url, method: 'POST', body: new Uint8Array(1024 * 1024 + 1) }, { resolver, allowCidrs: ALLOW_1 });
  assert.deepEqual(big, { code: 'TOO_LARGE', sockets: 0 });
  assert.equal(trap.connections, 0);
});
