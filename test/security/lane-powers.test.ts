// Attacks on the source lanes' host powers (engine.exec): an ungranted power must be absent, not a
// failing stub; every power call passes the broker cadence (granted → revoked → rate → size) with
// an audit record for each denial; the network guard applies to snippet fetches exactly as to core
// guests; a failed power says nothing about the host; and a power is no doorway out of QuickJS or
// Pyodide.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { MAX_POWER_FRAME_BYTES } from '../../src/lanes/powers.ts';
import { httpServer, outgoingSockets, type TestServer } from '../net/servers.ts';

const FLOOD_LIMIT = 20;
let engine: Engine;
let home: string;
let decoy: TestServer;

before(async () => {
  home = mkdtempSync(join(tmpdir(), 'membrane-lane-powers-sec-'));
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

test('a raw request to /dev/membrane for an ungranted power is DENIED by the cadence and audited', async () => {
  const code = [
    'import os, json',
    "fd = os.open('/dev/membrane', os.O_RDWR)",
    "os.write(fd, json.dumps({'power': 'queue.push', 'args': ['q', 'm']}).encode())",
    'answer = os.read(fd, 1000)',
    'os.close(fd)',
    'json.loads(answer)',
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
      const t0 = performance.now();
      const r = await local.exec({ ...c, profile: 'network', timeoutMs: 1000 });
      const took = performance.now() - t0;
      // The power answers TIMEOUT at the deadline; the interpreter then stops at its next refill.
      assert.ok(r.result === 'TIMEOUT' || r.error?.code === 'TIMEOUT', `${c.language}: ${JSON.stringify(r)}`);
      if (c.language === 'js') {
        assert.ok(took < 1000 + 1000, `js took ${took} ms`);
        assert.ok(!r.warnings.some((w) => /terminated/.test(w)), JSON.stringify(r.warnings));
      } else {
        // The child answered by itself (a killed child reports no output): its bridge wait ended at the deadline.
        assert.equal(r.stdout, 'TIMEOUT\n', JSON.stringify(r));
      }
    }
  } finally {
    await local.close();
    await hung.close();
  }
});
