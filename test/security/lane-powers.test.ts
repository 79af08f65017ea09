// Attacks on the source lanes' host powers (engine.exec): an ungranted power must be absent, not a
// failing stub; every power call passes the broker cadence (granted → revoked → rate → size) with
// an audit record for each denial; the network guard applies to snippet fetches exactly as to core
// guests; a failed power says nothing about the host; and a power is no doorway out of QuickJS or
// Pyodide — nor its VFS paths, SQL or commands a way onto the host (vfs, commands, exec).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CommandRegistry, createEngine, type Engine } from '../../src/index.ts';
import { GUEST_ERR, MAX_EXEC_DEPTH } from '../../src/abi/command.ts';
import { MAX_CONCURRENT_EXECS } from '../../src/engine/bridge/host-services.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { MAX_POWER_FRAME_BYTES } from '../../src/lanes/powers.ts';
import { httpServer, outgoingSockets, type TestServer } from '../net/servers.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

const FLOOD_LIMIT = 20;
let engine: Engine;
let home: string;
let decoy: TestServer;

before(async () => {
  home = tempDir('membrane-lane-powers-sec-');
  process.env['MEMBRANE_HOME'] = home;
  process.env['MEMBRANE_AUDIT_KEY'] = 'cd'.repeat(32);
  decoy = await httpServer((_req, res) => res.end('private data'), '127.0.0.1');
  // No allowCidrs: loopback is as unreachable as any private address. The queue broker gets a
  // low rate so a flood meets it quickly.
  engine = createEngine({
    poolSize: 1,
    brokers: { databaseFile: join(home, 'engine.sqlite'), secrets: { signer: 'x' }, rate: { perBroker: { queue: { limit: FLOOD_LIMIT, windowMs: 60_000 } } } },
  });
});
after(async () => {
  await engine.close();
  await decoy.close();
});

const exec = (language: 'js' | 'python', code: string, more: { profile?: string; tenant?: string; caps?: string[] } = {}) =>
  engine.exec({ language, code, profile: more.profile ?? 'minimal', tenant: more.tenant ?? 'attacker', ...(more.caps ? { caps: more.caps } : {}), timeoutMs: 60_000 });

const records = (tenant: string, op: string) => {
  const log = new AuditLog(openDatabase(join(home, 'engine.sqlite')));
  try {
    return log.tail({ tenant, kind: 'denied', limit: 1000 }).filter((r) => r.detail['op'] === op);
  } finally {
    log.close();
  }
};

const JS_GLOBALS = "[typeof kv, typeof queue, typeof secrets, typeof fetch, typeof llm, typeof browse, typeof tcp, typeof MembraneError]";
const PY_ATTRS = "import membrane\n[hasattr(membrane, n) for n in ('kv', 'queue', 'secrets', 'net', 'llm', 'browse', 'tcp')]";

test('ungranted powers are absent, not stubs: compute has no kv/queue/secrets/fetch global and no membrane attribute', async () => {
  const j = await exec('js', JS_GLOBALS, { profile: 'compute' });
  assert.deepEqual(j.result, Array(8).fill('undefined'), JSON.stringify(j));
  const p = await exec('python', PY_ATTRS, { profile: 'compute' });
  assert.deepEqual(p.result, Array(7).fill(false), JSON.stringify(p));
});

test('powers narrowed away by caps are absent: minimal narrowed to [kv] has kv and nothing else', async () => {
  const j = await exec('js', JS_GLOBALS, { caps: ['kv'] });
  assert.deepEqual(j.result, ['object', ...Array(7).fill('undefined')], JSON.stringify(j));
  const p = await exec('python', PY_ATTRS, { caps: ['kv'] });
  assert.deepEqual(p.result, [true, ...Array(6).fill(false)], JSON.stringify(p));
});

test('a raw power frame on the lane port for an ungranted power is DENIED by the cadence and audited', async () => {
  // The interpreter's port is its stdin (src/wasi/port.ts): one tag byte and JSON out, a u32
  // length and the answer back — what the `membrane` module sends, written by the snippet itself.
  const code = [
    'import os, json',
    "os.write(0, b'P' + json.dumps({'power': 'queue.push', 'args': ['q', 'm']}).encode())",
    'answer = os.read(0, 1000)',
    'json.loads(answer[4:])',
  ].join('\n');
  const r = await exec('python', code, { caps: ['kv'], tenant: 'raw-device' });
  assert.deepEqual(r.result, { ok: false, code: 'DENIED' }, JSON.stringify(r));
  assert.equal(records('raw-device', 'queue_push')[0]?.detail['why'], 'not granted');
});

test('SSRF through the JS fetch to 169.254.169.254 and to 127.0.0.1 (no allowCidrs) is DENIED, audited, and opens no socket', async () => {
  const targets = ['http://169.254.169.254/latest/meta-data/', `http://127.0.0.1:${decoy.port}/`];
  const code = `(async () => { const out = []; for (const u of ${JSON.stringify(targets)}) { try { await fetch(u); out.push('fetched'); } catch (e) { out.push(e.code); } } return out; })()`;
  let r: Awaited<ReturnType<typeof exec>> | undefined;
  const sockets = await outgoingSockets(async () => (r = await exec('js', code, { profile: 'network', tenant: 'ssrf-js' })));
  assert.deepEqual(r?.result, ['DENIED', 'DENIED'], JSON.stringify(r));
  assert.equal(sockets, 0);
  assert.equal(decoy.connections, 0);
  assert.deepEqual(records('ssrf-js', 'http_fetch').map((x) => x.detail['target']), targets);
});

test('SSRF through the Python membrane.net.fetch to 169.254.169.254 and to 127.0.0.1 is DENIED, audited, and opens no socket', async () => {
  const targets = ['http://169.254.169.254/latest/meta-data/', `http://127.0.0.1:${decoy.port}/`];
  const code = `import membrane\nout = []\nfor u in ${JSON.stringify(targets)}:\n  try:\n    membrane.net.fetch(u)\n    out.append('fetched')\n  except membrane.MembraneError as e:\n    out.append(e.code)\nout`;
  let r: Awaited<ReturnType<typeof exec>> | undefined;
  const sockets = await outgoingSockets(async () => (r = await exec('python', code, { profile: 'network', tenant: 'ssrf-py' })));
  assert.deepEqual(r?.result, ['DENIED', 'DENIED'], JSON.stringify(r));
  assert.equal(sockets, 0);
  assert.equal(decoy.connections, 0);
  assert.deepEqual(records('ssrf-py', 'http_fetch').map((x) => x.detail['target']), targets);
});

test("tenant A cannot read tenant B's kv key (same key name, separate stores)", async () => {
  assert.equal((await exec('js', "kv.put('shared-name', 'B secret'); 1", { tenant: 'tenant-b' })).ok, true);
  const a = await exec('js', "[kv.get('shared-name'), kv.list('')]", { tenant: 'tenant-a' });
  assert.deepEqual(a.result, [null, []]);
  const p = await exec('python', "import membrane\nmembrane.kv.get('shared-name')", { tenant: 'tenant-a' });
  assert.equal(p.ok, true, JSON.stringify(p));
  assert.equal('result' in p, false);
});

test('a revoked tenant gets REVOKED from every power, in both lanes; restoring lifts it', async () => {
  engine.revoke({ tenant: 'revoked-t' });
  const j = await exec('js', "try { kv.get('k'); 'read' } catch (e) { [e.name, e.code] }", { tenant: 'revoked-t' });
  assert.deepEqual(j.result, ['MembraneError', 'REVOKED']);
  const p = await exec('python', "import membrane\ntry:\n  membrane.kv.get('k')\n  r = 'read'\nexcept membrane.MembraneError as e:\n  r = e.code\nr", { tenant: 'revoked-t' });
  assert.equal(p.result, 'REVOKED', JSON.stringify(p));
  assert.ok(records('revoked-t', 'kv_get').every((x) => x.detail['code'] === 'REVOKED'));
  engine.restore({ tenant: 'revoked-t' });
  assert.equal((await exec('js', "kv.get('k')", { tenant: 'revoked-t' })).result, null);
});

test('a power flood hits RATE_LIMITED at the configured rate (recorded once per window)', async () => {
  const r = await exec('js', "(() => { let k = 0; try { for (;;) { queue.len('q'); k++; } } catch (e) { return [k, e.code]; } })()", { tenant: 'flooder' });
  const [calls, code] = r.result as [number, string];
  assert.equal(code, 'RATE_LIMITED', JSON.stringify(r));
  // Exactly the limit, unless the loop straddled a window boundary (then at most twice).
  assert.ok(calls >= FLOOD_LIMIT && calls <= 2 * FLOOD_LIMIT, String(calls));
  const limited = records('flooder', 'queue_len').filter((x) => x.detail['code'] === 'RATE_LIMITED');
  assert.equal(limited.length, 1);
});

test('an oversized kv value is TOO_LARGE in both lanes; a request past the bridge frame cap is TOO_LARGE and audited', async () => {
  // 1 MiB + 1 passes the cadence's size step (key + value cap) and is refused by the store, as for
  // a core guest; 9 MiB passes the bridge's frame cap and is refused — and audited — by the cadence.
  const j = await exec('js', "const codes = []; for (const n of [1024 * 1024 + 1, 9 * 1024 * 1024]) { try { kv.put('big', 'x'.repeat(n)); codes.push('stored'); } catch (e) { codes.push(e.code); } } codes", { tenant: 'big-js' });
  assert.deepEqual(j.result, ['TOO_LARGE', 'TOO_LARGE'], JSON.stringify(j));
  const p = await exec('python', "import membrane\ncodes = []\nfor n in (1024 * 1024 + 1, 9 * 1024 * 1024):\n  try:\n    membrane.kv.put('big', 'x' * n)\n    codes.append('stored')\n  except membrane.MembraneError as e:\n    codes.append(e.code)\ncodes", { tenant: 'big-py' });
  assert.deepEqual(p.result, ['TOO_LARGE', 'TOO_LARGE'], JSON.stringify(p));
  for (const tenant of ['big-js', 'big-py']) {
    const denied = records(tenant, 'kv_put');
    assert.deepEqual(denied.map((x) => [x.detail['code'], x.detail['max']]), [['TOO_LARGE', MAX_POWER_FRAME_BYTES]], tenant);
  }
  // Nothing was stored.
  assert.equal((await exec('js', "kv.get('big')", { tenant: 'big-js' })).result, null);
});

test("a power's error message carries no host path or stack", async () => {
  const j = await exec('js', "try { kv.get(42) } catch (e) { [e.code, e.message, String(e.stack)] }", { tenant: 'leak' });
  const [code, message, stack] = j.result as string[];
  assert.equal(code, 'INVALID');
  const p = await exec('python', "import membrane, traceback\ntry:\n  membrane.secrets.sign('no-such-secret', 'm')\nexcept membrane.MembraneError as e:\n  r = [e.code, str(e), traceback.format_exc()]\nr", { tenant: 'leak' });
  const [pcode, pmessage, ptrace] = p.result as string[];
  assert.equal(pcode, 'NOT_FOUND');
  for (const text of [message, stack, pmessage, ptrace]) {
    for (const host of [home, process.cwd(), '/work', 'node:', '.ts:', 'node_modules', 'SandboxError']) assert.ok(!text!.includes(host), `${JSON.stringify(text)} mentions ${host}`);
  }
});

test('a JS snippet cannot reach host objects through a power: its functions are QuickJS functions', async () => {
  const code = [
    "const probes = [kv.get.constructor('return typeof process')(), kv.get.constructor('return typeof require')(),",
    " fetch.constructor('return this')() === globalThis, Object.getPrototypeOf(secrets.sign) === Function.prototype,",
    " Object.getOwnPropertyNames(kv).sort().join(','), typeof power, typeof globalThis.power];",
    "let caller; try { caller = kv.get.caller; } catch (e) { caller = e.name; }",
    "probes.push(caller);",
    "kv.get = () => 'forged';",
    "probes.push(Object.isFrozen(kv), kv.get('never-written'));",
    'probes',
  ].join('\n');
  const r = await exec('js', code, { profile: 'network' });
  assert.deepEqual(r.result, ['undefined', 'undefined', true, true, 'delete,get,list,put', 'undefined', 'undefined', 'TypeError', true, null], JSON.stringify(r));
});

test('a power hung on a server that never answers cannot hold the lane past the deadline (TIMEOUT, in both lanes)', async () => {
  const hung = await httpServer(() => {}, '127.0.0.1'); // accepts, never answers
  const local = createEngine({ poolSize: 1, brokers: { databaseFile: join(home, 'engine-hung.sqlite'), net: { allowCidrs: ['127.0.0.1/32'] } } });
  try {
    const url = JSON.stringify(`http://127.0.0.1:${hung.port}/`);
    const cases = [
      { language: 'js' as const, code: `(async () => { try { await fetch(${url}); return 'answered'; } catch (e) { return e.code; } })()` },
      { language: 'python' as const, code: `import membrane\ntry:\n  membrane.net.fetch(${url})\n  r = 'answered'\nexcept membrane.MembraneError as e:\n  r = e.code\nprint(r)\nr` },
    ];
    for (const c of cases) {
      // Time the call, not the lane's first start (worker boot, the 128 MiB interpreter pool).
      assert.equal((await local.exec({ language: c.language, code: '1', profile: 'network' })).result, 1);
      const t0 = performance.now();
      const r = await local.exec({ ...c, profile: 'network', timeoutMs: 1000 });
      const took = performance.now() - t0;
      // The power answers TIMEOUT at the deadline; the interpreter then stops at its next refill.
      assert.ok(r.result === 'TIMEOUT' || r.error?.code === 'TIMEOUT', `${c.language}: ${JSON.stringify(r)}`);
      assert.ok(took < 1000 + LOAD_SLACK_MS, `${c.language} took ${took} ms`);
      assert.ok(!r.warnings.some((w) => /terminated/.test(w)), JSON.stringify(r.warnings));
    }
  } finally {
    await local.close();
    await hung.close();
  }
});

// vfs, commands and exec: a snippet's paths stay in its VFS, its SQL in its database, its commands
// in the registry, and its command runs inside its own deadline and its tenant's exec bound.

const ESCAPES = ['/etc/passwd', '../../../../etc/passwd', '/../../../../etc/passwd', '/tmp/../../etc/passwd', '/proc/self/environ', '/a\0b', `/${'x'.repeat(5000)}`];
const ESCAPE_CODES = [null, 'INVALID', null, null, null, 'INVALID', 'TOO_LARGE'];

test('path escapes through vfs.read (/etc/passwd, ../ chains, /proc/self/environ, NUL, 5 000 chars) reach nothing on the host, in both lanes', async () => {
  const js = await exec('js', `${JSON.stringify(ESCAPES)}.map((p) => { try { return vfs.read(p); } catch (e) { return e.code; } })`);
  assert.deepEqual(js.result, ESCAPE_CODES, JSON.stringify(js));
  const py = await exec('python', `import membrane\ndef f(p):\n  try: return membrane.vfs.read(p)\n  except membrane.MembraneError as e: return e.code\n[f(p) for p in ${JSON.stringify(ESCAPES)}]`);
  assert.deepEqual(py.result, ESCAPE_CODES, JSON.stringify(py));
});

test('path escapes through vfs.write land inside the VFS: the host /etc/passwd and $MEMBRANE_HOME are untouched', async () => {
  const passwd = readFileSync('/etc/passwd', 'utf8');
  const marker = join(home, 'escaped.txt');
  const targets = ['/etc/passwd', '/../../../../etc/passwd', `/../../../..${marker}`, `/tmp/../..${marker}`];
  const js = await exec('js', `const out = []; for (const p of ${JSON.stringify(targets)}) { vfs.write(p, 'pwned'); out.push(vfs.read(p)); } out.push((() => { try { vfs.write('../../etc/passwd', 'x'); } catch (e) { return e.code; } })()); out`);
  assert.deepEqual(js.result, ['pwned', 'pwned', 'pwned', 'pwned', 'INVALID'], JSON.stringify(js));
  const py = await exec('python', `import membrane\nfor p in ${JSON.stringify(targets)}: membrane.vfs.write(p, 'pwned')\n[membrane.vfs.read(p) for p in ${JSON.stringify(targets)}]`);
  assert.deepEqual(py.result, ['pwned', 'pwned', 'pwned', 'pwned'], JSON.stringify(py));
  assert.equal(readFileSync('/etc/passwd', 'utf8'), passwd);
  assert.equal(existsSync(marker), false);
});

test('vfs.query with ATTACH, load_extension, pragma database_list or pragma_database_list is refused (no host path in the answer)', async () => {
  const attempts = ["ATTACH DATABASE '/tmp/other.db' AS other", "SELECT load_extension('/usr/lib/x.so')", 'PRAGMA database_list', 'SELECT file FROM pragma_database_list', "VACUUM INTO '/tmp/copy.db'"];
  const js = await exec('js', `${JSON.stringify(attempts)}.map((q) => { try { return vfs.query(q); } catch (e) { return [e.code, e.message]; } })`);
  for (const [code, message] of js.result as [string, string][]) {
    assert.ok(code === 'DENIED' || code === 'INVALID', code);
    assert.doesNotMatch(message, /\/tmp|membrane-|\.sqlite/);
  }
  const py = await exec('python', `import membrane\ndef f(q):\n  try: return membrane.vfs.query(q)\n  except membrane.MembraneError as e: return e.code\n[f(q) for q in ${JSON.stringify(attempts)}]`);
  assert.ok((py.result as string[]).every((c) => c === 'DENIED' || c === 'INVALID'), JSON.stringify(py));
  assert.equal(existsSync('/tmp/copy.db'), false);
});

test('commands.run of an unregistered name or a host path (/bin/sh, ../bin/cat) is NOT_FOUND, in both lanes', async () => {
  const names = ['/bin/sh', 'sh', '../bin/cat', 'nosuch'];
  const js = await exec('js', `${JSON.stringify(names)}.map((n) => { try { return commands.run(n, ['-c', 'id']); } catch (e) { return e.code; } })`);
  assert.deepEqual(js.result, ['NOT_FOUND', 'NOT_FOUND', 'NOT_FOUND', 'NOT_FOUND']);
  const py = await exec('python', `import membrane\ndef f(n):\n  try: return membrane.commands.run(n, ['-c', 'id'])\n  except membrane.MembraneError as e: return e.code\n[f(n) for n in ${JSON.stringify(names)}]`);
  assert.deepEqual(py.result, ['NOT_FOUND', 'NOT_FOUND', 'NOT_FOUND', 'NOT_FOUND']);
});

test('under compute (commands and exec not granted) there is no commands or exec power; vfs is there', async () => {
  const j = await exec('js', '[typeof commands, typeof exec, typeof vfs]', { profile: 'compute' });
  assert.deepEqual(j.result, ['undefined', 'undefined', 'object']);
  const p = await exec('python', "import membrane\n[hasattr(membrane, 'commands'), hasattr(membrane, 'exec'), hasattr(membrane, 'vfs')]", { profile: 'compute' });
  assert.deepEqual(p.result, [false, false, true]);
  // Narrowed to [vfs] under minimal: the same.
  const n = await exec('js', '[typeof commands, typeof exec, typeof vfs]', { caps: ['vfs'] });
  assert.deepEqual(n.result, ['undefined', 'undefined', 'object']);
});

/** An engine with the `nest` and `waiter` test commands registered, and room for 64 held execs. */
let nesting: Engine | null = null;
const withNest = (): Engine => {
  if (nesting) return nesting;
  const registry = CommandRegistry.withBuiltins();
  registry.register('nest', new Uint8Array(readFileSync(new URL('../fixtures/c/nest.wasm', import.meta.url))));
  registry.register('waiter', new Uint8Array(readFileSync(new URL('../fixtures/c/waiter.wasm', import.meta.url))));
  // posix's 60 s may be too short for 64 held execs to all be in flight on a loaded 2-core machine.
  // One tenant holds every exec slot at once: its share of the workers is the whole engine.
  nesting = createEngine({ commands: registry, poolSize: 1, maxWorkers: MAX_CONCURRENT_EXECS + 4, maxWorkersPerTenant: MAX_CONCURRENT_EXECS + 4, workerHeapMb: 16, operatorLimits: { posix: { timeoutMs: 240_000 } }, brokers: { databaseFile: join(home, 'engine.sqlite') } });
  return nesting;
};
after(() => nesting?.close());

test(`exec recursion from a snippet stops at depth ${MAX_EXEC_DEPTH}: the exec that would be depth ${MAX_EXEC_DEPTH + 1} is QUOTA`, async () => {
  const r = await withNest().exec({ language: 'js', code: "exec.run('nest', ['deep', '1']).stdout", profile: 'minimal', tenant: 'recurser' });
  const lines = String(r.result).trim().split('\n');
  assert.deepEqual(lines, [...Array.from({ length: MAX_EXEC_DEPTH }, (_, d) => `depth ${d + 1}`), `refused ${GUEST_ERR.QUOTA}`], JSON.stringify(r));
});

test(`an exec flood: with ${MAX_CONCURRENT_EXECS} execs of the tenant in flight, a snippet's exec.run is QUOTA (audited); commands.run is not an exec`, { timeout: 300_000 }, async () => {
  const e = withNest();
  const tenant = 'lane-flooder';
  const vfs = 'lane-exec-flood';
  // Each holder waits up to 200 s for /go, so all 64 can be in flight at once however slowly they start.
  const held = Array.from({ length: MAX_CONCURRENT_EXECS }, () => e.run(new Uint8Array(readFileSync(new URL('../fixtures/c/nest.wasm', import.meta.url))), { profile: 'posix', tenant, vfs, argv: ['exec', 'waiter', '/go', '200'], timeoutMs: 230_000 }));
  const end = Date.now() + 200_000;
  while (e.principalUsage(tenant).execs < MAX_CONCURRENT_EXECS && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  assert.equal(e.principalUsage(tenant).execs, MAX_CONCURRENT_EXECS);
  const code = "const r = []; try { exec.run('echo', ['x']); r.push('ran'); } catch (err) { r.push(err.code); } r.push(commands.run('echo', ['still']).stdout); r";
  const js = await e.exec({ language: 'js', code, profile: 'minimal', tenant });
  assert.deepEqual(js.result, ['QUOTA', 'still\n'], JSON.stringify(js));
  const py = await e.exec({ language: 'python', code: "import membrane\ntry:\n  membrane.exec.run('echo', ['x'])\n  r = 'ran'\nexcept membrane.MembraneError as err:\n  r = err.code\nr", profile: 'minimal', tenant, timeoutMs: 60_000 });
  assert.equal(py.result, 'QUOTA', JSON.stringify(py));
  const release = await e.exec({ language: 'js', code: "vfs.write('/go', '1')", profile: 'minimal', tenant: 'bystander', vfs });
  assert.equal(release.ok, true);
  for (const r of await Promise.all(held)) assert.equal(r.stdout, 'found\nstatus=0 error=\n');
  assert.deepEqual(e.principalUsage(tenant), { execs: 0, processes: 0 });
  assert.equal((await e.exec({ language: 'js', code: "exec.run('echo', ['room']).stdout", profile: 'minimal', tenant })).result, 'room\n');
  assert.ok(records(tenant, 'exec').some((r) => r.detail['code'] === 'QUOTA'));
});

test("a command run by a snippet cannot outlive the snippet's deadline: a 10 s spinner ends with the 1 s call", async () => {
  const e = withNest();
  // Start the lane first (its first use boots a worker), so the bound below times the call alone.
  assert.equal((await e.exec({ language: 'js', code: '1' })).result, 1);
  const t0 = performance.now();
  const r = await e.exec({ language: 'js', code: "exec.run('nest', ['spin', '10000'])", profile: 'minimal', tenant: 'spinner', timeoutMs: 1000 });
  const elapsed = performance.now() - t0;
  assert.equal(r.ok, false);
  assert.equal(r.error?.code, 'TIMEOUT', JSON.stringify(r));
  assert.ok(elapsed < 1000 + LOAD_SLACK_MS, `took ${elapsed} ms`);
  // The command's exec slot is back: nothing of it is still running.
  assert.deepEqual(e.principalUsage('spinner'), { execs: 0, processes: 0 });
});

// One fuel budget: the fuel a snippet's commands burn is charged to the snippet's own meter, and a
// command is granted at most what the snippet has left — no second budget for commands.

const SMALL_FUEL = 2e7;
/** The snippet's own refill chunk (1e6 raw wasm units, in interpreter units): the slack past the budget. */
const CHUNK_SLACK = 1000;
const steps = async (vfs: string): Promise<Record<string, unknown>[]> => {
  const r = await engine.exec({ language: 'js', code: "vfs.read('/_steps.jsonl')", profile: 'minimal', tenant: 'fuel-reader', vfs });
  return String(r.result).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
};

test('a snippet whose commands burn fuel cannot exceed its own budget: a loop of commands.run ends FUEL_EXHAUSTED within it, in both lanes', async () => {
  const cases = [
    { language: 'js' as const, code: "let n = 0; for (;;) { const r = commands.run('seq', ['1', '1000']); if (r.status !== 0) console.log('refused', r.error); console.log(++n); }" },
    { language: 'python' as const, code: "import membrane\nn = 0\nwhile True:\n  r = membrane.commands.run('seq', ['1', '1000'])\n  if r['status'] != 0: print('refused', r.get('error'))\n  n += 1\n  print(n)" },
  ];
  for (const c of cases) {
    const r = await engine.exec({ ...c, profile: 'minimal', tenant: 'fuel-burner', fuel: SMALL_FUEL });
    assert.equal(r.error?.code, 'FUEL_EXHAUSTED', `${c.language}: ${JSON.stringify({ ...r, stdout: r.stdout.slice(-200) })}`);
    // Before: commands drew on a pool of their own, so the total reached twice the budget.
    assert.ok(r.fuelUsed >= SMALL_FUEL && r.fuelUsed <= SMALL_FUEL + CHUNK_SLACK, `${c.language}: fuelUsed ${r.fuelUsed}`);
    // The commands really ran (several, each charged) before the budget ended the snippet.
    const lines = r.stdout.split('\n');
    assert.ok(lines.filter((l) => /^\d+$/.test(l)).length >= 2, `${c.language}: ${r.stdout.slice(-200)}`);
    // ... and once they had spent it, the snippet stopped within a few statements: it did not go on
    // asking for commands on an interpreter budget of its own.
    assert.ok(lines.filter((l) => l.startsWith('refused')).length <= 10, `${c.language}: ${r.stdout.slice(-200)}`);
  }
});

test('a snippet whose commands burn fuel cannot exceed its own budget: one command asked to run past what remains ends with its own FUEL_EXHAUSTED, in both lanes', async () => {
  const cases = [
    { language: 'js' as const, vfs: 'fuel-one-js', code: "exec.run('seq', ['1', '100000'])" },
    { language: 'python' as const, vfs: 'fuel-one-py', code: "import membrane\nmembrane.exec.run('seq', ['1', '100000'])" },
  ];
  for (const c of cases) {
    const r = await engine.exec({ language: c.language, code: c.code, vfs: c.vfs, profile: 'minimal', tenant: 'fuel-burner', fuel: SMALL_FUEL });
    assert.equal(r.error?.code, 'FUEL_EXHAUSTED', `${c.language}: ${JSON.stringify(r)}`);
    assert.ok(r.fuelUsed <= SMALL_FUEL + CHUNK_SLACK, `${c.language}: fuelUsed ${r.fuelUsed}`);
    // The command was granted only what the snippet had left, ran out of it, and was answered so.
    const [step] = await steps(c.vfs);
    assert.equal(step?.['error'], 'FUEL_EXHAUSTED', JSON.stringify(step));
    assert.ok(Number(step?.['fuelUsed']) > 0 && Number(step?.['fuelUsed']) <= SMALL_FUEL, JSON.stringify(step));
  }
});

test("a command's fuel is counted once in the snippet's fuelUsed, in both lanes", async () => {
  const cases = [
    { language: 'js' as const, vfs: 'fuel-once-js', code: "exec.run('seq', ['1', '1000']).status" },
    { language: 'python' as const, vfs: 'fuel-once-py', code: "import membrane\nmembrane.exec.run('seq', ['1', '1000'])['status']" },
  ];
  for (const c of cases) {
    const r = await engine.exec({ language: c.language, code: c.code, vfs: c.vfs, profile: 'minimal', tenant: 'fuel-burner' });
    assert.equal(r.result, 0, JSON.stringify(r));
    const [step] = await steps(c.vfs);
    const command = Number(step?.['fuelUsed']);
    // The interpreter's own share of a one-line snippet is small next to seq's.
    assert.ok(command > 100_000 && r.fuelUsed >= command && r.fuelUsed < command + 100_000, `${c.language}: ${r.fuelUsed} vs ${command}`);
  }
});
