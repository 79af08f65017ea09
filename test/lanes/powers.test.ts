// Host powers in the source lanes, through engine.exec: a granted cap is a usable power in a JS
// snippet (globals) and in a Python snippet (the membrane module), served by the same brokers a
// core guest reaches — kv round trip, queue FIFO, secrets.sign (HMAC-SHA256) and fetch against a
// server this test starts on 127.0.0.1 (allowed by the operator's allowCidrs); the call's VFS
// (vfs.*), registered commands run against it (commands.run, exec.run), private or named.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { httpServer, type TestServer } from '../net/servers.ts';
import { tempDir } from '../helpers/tmp.ts';

const SECRET = 'lane-powers-signing-secret';
let engine: Engine;
let server: TestServer;

before(async () => {
  const home = tempDir('membrane-lane-powers-');
  process.env['MEMBRANE_HOME'] = home;
  process.env['MEMBRANE_AUDIT_KEY'] = 'ab'.repeat(32);
  server = await httpServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ hello: 'from the host', path: req.url, method: req.method }));
  }, '127.0.0.1');
  engine = createEngine({
    poolSize: 1,
    brokers: { databaseFile: join(home, 'engine.sqlite'), secrets: { signer: SECRET }, net: { allowCidrs: ['127.0.0.1/32'] } },
  });
});
after(async () => {
  await engine.close();
  await server.close();
});

const js = async (code: string, profile = 'minimal', tenant = 'lanes') => {
  const r = await engine.exec({ language: 'js', code, profile, tenant });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  return r;
};
const py = async (code: string, profile = 'minimal', tenant = 'lanes') => {
  const r = await engine.exec({ language: 'python', code, profile, tenant, timeoutMs: 60_000 });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  return r;
};

test('JS: kv.put then kv.get round trip under minimal; list, delete, a missing key is null', async () => {
  const r = await js("kv.put('js:greeting', 'hello'); kv.put('js:other', 'x'); [kv.get('js:greeting'), kv.list('js:'), kv.delete('js:other'), kv.delete('js:other'), kv.get('js:other')]");
  assert.deepEqual(r.result, ['hello', ['js:greeting', 'js:other'], true, false, null]);
  // Durable: a later call (a fresh interpreter) reads what this one wrote.
  assert.equal((await js("kv.get('js:greeting')")).result, 'hello');
});

test('JS: queue push/pop is FIFO; len counts; an empty pop is null', async () => {
  const r = await js("queue.push('jobs', 'a'); queue.push('jobs', 'b'); [queue.len('jobs'), queue.pop('jobs'), queue.pop('jobs'), queue.pop('jobs')]");
  assert.deepEqual(r.result, [2, 'a', 'b', null]);
});

test('JS: secrets.sign equals HMAC-SHA256 under the named secret; the secret itself never appears', async () => {
  const r = await js("secrets.sign('signer', 'message to sign')");
  assert.equal(r.result, createHmac('sha256', SECRET).update('message to sign').digest('hex'));
});

test('JS: await fetch(url) against a 127.0.0.1 server (network profile) returns its body', async () => {
  const url = `http://127.0.0.1:${server.port}/js-path`;
  const r = await js(`(async () => { const res = await fetch(${JSON.stringify(url)}, { method: 'POST', body: 'x', headers: { 'x-test': '1' } }); return [res.status, res.ok, res.headers['content-type'], await res.json()]; })()`, 'network');
  assert.deepEqual(r.result, [200, true, 'application/json', { hello: 'from the host', path: '/js-path', method: 'POST' }]);
});

test('Python: kv round trip, queue FIFO and secrets.sign through the membrane module under minimal', async () => {
  const r = await py(
    [
      'import membrane',
      "membrane.kv.put('py:greeting', 'hello')",
      "membrane.queue.push('pyjobs', 'first')",
      "membrane.queue.push('pyjobs', 'second')",
      "[membrane.kv.get('py:greeting'), membrane.kv.get('py:missing'), membrane.kv.list('py:'), membrane.queue.len('pyjobs'),",
      " membrane.queue.pop('pyjobs'), membrane.queue.pop('pyjobs'), membrane.queue.pop('pyjobs'), membrane.secrets.sign('signer', 'message to sign')]",
    ].join('\n'),
  );
  assert.deepEqual(r.result, ['hello', null, ['py:greeting'], 2, 'first', 'second', null, createHmac('sha256', SECRET).update('message to sign').digest('hex')]);
  // The JS lane and a core guest share the tenant's store: the JS lane reads Python's key.
  assert.equal((await js("kv.get('py:greeting')")).result, 'hello');
});

test('Python: membrane.net.fetch against a 127.0.0.1 server (network profile) returns its body', async () => {
  const url = `http://127.0.0.1:${server.port}/py-path`;
  const r = await py(`import membrane\nres = membrane.net.fetch(${JSON.stringify(url)})\n[res.status, res.ok, res.json()]`, 'network');
  assert.deepEqual(r.result, [200, true, { hello: 'from the host', path: '/py-path', method: 'GET' }]);
});

// vfs, commands, exec: the call's own VFS (private by default, a named persistent one on request)
// and registered WASI commands run against it.

const CAT = new Uint8Array(readFileSync(new URL('../../commands/bin/cat.wasm', import.meta.url)));
const CP = new Uint8Array(readFileSync(new URL('../../commands/bin/cp.wasm', import.meta.url)));
const leftovers = () => readdirSync(join(process.env['MEMBRANE_HOME']!, 'vfs')).filter((f) => f.startsWith('exec-'));

test('JS: vfs.write, read back, list, `cat` it with commands.run, `wc -c` on stdin, vfs.query, under minimal', async () => {
  const r = await js(
    [
      "vfs.write('/notes/today.txt', 'remember the milk\\n');",
      "[vfs.read('/notes/today.txt'), vfs.list('/notes'), commands.run('cat', ['/notes/today.txt']),",
      " commands.run('wc', ['-c'], { stdin: 'twelve bytes' }), vfs.query('SELECT count(*) FROM dirents'), vfs.read('/notes/none.txt'),",
      " vfs.delete('/notes/today.txt'), vfs.delete('/notes/today.txt')]",
    ].join('\n'),
  );
  assert.deepEqual(r.result, [
    'remember the milk\n',
    [
      { path: '/notes', type: 'dir', size: 0 },
      { path: '/notes/today.txt', type: 'file', size: 18 },
    ],
    { status: 0, stdout: 'remember the milk\n', stderr: '' },
    { status: 0, stdout: '12\n', stderr: '' },
    { columns: ['count(*)'], rows: [[2]] },
    null,
    true,
    false,
  ]);
  // The commands' fuel is part of the call's.
  assert.ok(r.fuelUsed > 0);
});

test('Python: membrane.vfs write/read/list, commands.run cat and wc -c with stdin, vfs.query, under minimal', async () => {
  const r = await py(
    [
      'import membrane',
      "membrane.vfs.write('/data/py.txt', 'from python\\n')",
      "[membrane.vfs.read('/data/py.txt'), membrane.vfs.list('/data'), membrane.commands.run('cat', ['/data/py.txt']),",
      " membrane.commands.run('wc', ['-c'], stdin='abc'), membrane.vfs.query('SELECT count(*) FROM dirents'), membrane.vfs.read('/data/none')]",
    ].join('\n'),
  );
  assert.deepEqual(r.result, [
    'from python\n',
    [
      { path: '/data', type: 'dir', size: 0 },
      { path: '/data/py.txt', type: 'file', size: 12 },
    ],
    { status: 0, stdout: 'from python\n', stderr: '' },
    { status: 0, stdout: '3\n', stderr: '' },
    { columns: ['count(*)'], rows: [[2]] },
    null,
  ]);
});

test('the vfs, commands and exec caps have powers now: no "no power yet" warning names them', async () => {
  for (const language of ['js', 'python'] as const) {
    const r = await engine.exec({ language, code: '1', profile: 'posix', tenant: 'lanes', timeoutMs: 60_000 });
    const warning = r.warnings.find((w) => w.includes('no power in this lane yet'));
    assert.ok(warning, JSON.stringify(r.warnings));
    assert.match(warning, /: posix, parallel$/);
  }
  assert.ok(!(await js('1')).warnings.some((w) => w.includes('no power')));
});

test('exec.run runs a command through the exec broker and appends one line to /_steps.jsonl', async () => {
  const r = await js("const a = exec.run('echo', ['stepped']); [a, vfs.read('/_steps.jsonl')]");
  const [answer, steps] = r.result as [unknown, string];
  assert.deepEqual(answer, { status: 0, stdout: 'stepped\n', stderr: '' });
  const lines = steps.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(lines.length, 1);
  assert.deepEqual([lines[0]!['op'], lines[0]!['depth'], lines[0]!['argv'], lines[0]!['status']], ['exec', 1, ['echo', 'stepped'], 0]);
});

test('with vfs: NAME, a file a JS snippet wrote is read by a Python call, by `cat` and by engine.run with --vfs NAME', async () => {
  const vfs = 'lane-shared';
  const w = await engine.exec({ language: 'js', code: "vfs.write('/shared/note.txt', 'persisted by a snippet\\n')", profile: 'minimal', tenant: 'lanes', vfs });
  assert.equal(w.ok, true, JSON.stringify(w.error));
  const p = await engine.exec({ language: 'python', code: "import membrane\nmembrane.vfs.read('/shared/note.txt')", profile: 'minimal', tenant: 'lanes', vfs, timeoutMs: 60_000 });
  assert.equal(p.result, 'persisted by a snippet\n');
  const cat = await engine.run(CAT, { profile: 'compute', vfs, argv: ['/shared/note.txt'] });
  assert.equal(cat.stdout, 'persisted by a snippet\n', JSON.stringify(cat.error));
  // And the other way round: what a wasm guest wrote is visible to the next snippet.
  const cp = await engine.run(CP, { profile: 'compute', vfs, argv: ['/shared/note.txt', '/shared/copy.txt'] });
  assert.equal(cp.ok, true, JSON.stringify(cp.error));
  assert.equal((await engine.exec({ language: 'js', code: "vfs.read('/shared/copy.txt')", profile: 'minimal', vfs })).result, 'persisted by a snippet\n');
  const back = await js("commands.run('cat', ['/shared/note.txt']).stdout", 'minimal');
  assert.equal(back.result, '', 'a call without vfs: NAME does not see the named VFS');
  assert.deepEqual(leftovers(), []);
});

test('the default VFS is private to the call: the next call does not see its file, and no database is left behind', async () => {
  const first = await js("vfs.write('/private.txt', 'mine'); [vfs.read('/private.txt'), vfs.list('/').length > 0]");
  assert.deepEqual(first.result, ['mine', true]);
  assert.deepEqual(leftovers(), []);
  const second = await py("import membrane\n[membrane.vfs.read('/private.txt'), membrane.vfs.list('/private')]");
  assert.deepEqual(second.result, [null, []]);
  assert.deepEqual(leftovers(), []);
  // A call that never touches its VFS creates none at all.
  assert.equal((await js('6 * 7')).result, 42);
  assert.deepEqual(leftovers(), []);
});
