// Attack (or accident): `membrane serve` pointed at an address it cannot have — a port another
// process holds, an address not on this host. It must fail at once with one line naming the
// address and exit 3 (BIND_FAILED_EXIT), never print INTERNAL and never hang; the library's
// startServer must reject and release what it opened (the process exits on its own).
// Not tested: a port below 1024 as a non-root user (EACCES) — these tests run as root, where
// binding it succeeds; the message for it is in serve.ts's BIND_ERRORS.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-busy-port-');
const membrane = (args: string[]) => runCli(args, { MEMBRANE_HOME: HOME }, 30_000);

async function holdPort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

test('serve on a busy port: "address 127.0.0.1:PORT is in use", exit 3, about as fast as the CLI starts', async () => {
  const { server, port } = await holdPort();
  try {
    const base = await membrane(['--version']);
    const r = await membrane(['serve', '--port', String(port)]);
    assert.equal(r.stderr, `membrane serve: address 127.0.0.1:${port} is in use\n`);
    assert.equal(r.code, 3);
    assert.equal(r.stdout, '');
    // The CLI's own start is the floor on a loaded box; the failed bind adds next to nothing.
    assert.ok(r.ms < base.ms + 2000, `took ${Math.round(r.ms)} ms (membrane --version: ${Math.round(base.ms)} ms)`);
    const j = await membrane(['serve', '--port', String(port), '--json']);
    assert.equal(j.code, 3);
    assert.equal(j.stdout, '');
  } finally {
    server.close();
  }
});

test('serve on an address this host does not have: exit 3, one line, no hang', async () => {
  const r = await membrane(['serve', '--host', '192.0.2.1', '--port', '7070']);
  assert.equal(r.code, 3, r.stderr);
  assert.equal(r.stderr, 'membrane serve: address 192.0.2.1:7070 is not available on this host\n');
});

test('serve with a port taken in the config file fails the same way', async () => {
  const { server, port } = await holdPort();
  try {
    const { writeFileSync } = await import('node:fs');
    const cfg = join(HOME, 'serve.json');
    writeFileSync(cfg, JSON.stringify({ server: { port } }));
    const r = await membrane(['serve', '--config', cfg]);
    assert.equal(r.code, 3, r.stderr);
    assert.equal(r.stderr, `membrane serve: address 127.0.0.1:${port} is in use\n`);
  } finally {
    server.close();
  }
});

test('bindFailure: the host named in the line cannot drive the terminal; other errors are not bind failures', async () => {
  const { bindFailure } = await import('../../src/interfaces/cli/serve.ts');
  const inUse = Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE', address: '::1', port: 7070 });
  assert.equal(bindFailure(inUse, '::1', 7070), 'address [::1]:7070 is in use');
  const noHost = Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
  assert.equal(bindFailure(noHost, 'bad\u001b[2J\u202ehost', 7070), 'cannot listen on "bad\\u001b[2J\\u202ehost": no such host');
  assert.equal(bindFailure(Object.assign(new Error('x'), { code: 'ENOENT' }), 'h', 1), null);
  assert.equal(bindFailure('EADDRINUSE', 'h', 1), null);
});

test('other startup failures end the process too: a bad config (64), an unusable $MEMBRANE_HOME (64)', async () => {
  const { writeFileSync } = await import('node:fs');
  const cfg = join(HOME, 'broken.json');
  writeFileSync(cfg, '{not json');
  const bad = await membrane(['serve', '--port', '0', '--config', cfg]);
  assert.equal(bad.code, 64, bad.stderr);
  assert.match(bad.stderr, /POLICY_INVALID: broken\.json is not valid JSON/);
  const file = join(HOME, 'not-a-directory');
  writeFileSync(file, '');
  const home = await runCli(['serve', '--port', '0'], { MEMBRANE_HOME: file }, 30_000);
  assert.equal(home.code, 64, home.stderr);
  assert.match(home.stderr, /^membrane serve: cannot start: /);
  assert.ok(!home.stderr.includes('INTERNAL'));
});

test('library: startServer on a busy port rejects with EADDRINUSE and leaves nothing keeping Node alive', async () => {
  const { server, port } = await holdPort();
  try {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const src = `
      import { startServer } from './src/interfaces/http/server.ts';
      try { await startServer({ port: ${port}, home: ${JSON.stringify(HOME)}, logger: { level: 'silent' } }); console.log('started'); }
      catch (e) { console.log('rejected', e.code); }`;
    const t0 = performance.now();
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', src], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await new Promise<number | null>((r) => child.on('close', r));
    clearTimeout(killer);
    assert.equal(code, 0, `the script did not exit by itself (${Math.round(performance.now() - t0)} ms): ${out}`);
    assert.match(out, /^rejected EADDRINUSE$/m);
  } finally {
    server.close();
  }
});
