// Attack: make an embedder host function throw and read the host's secrets out of the error. A
// host function that throws (an Error carrying a host path, a password and a stack; a non-Error
// value; a result JSON cannot carry; a `HostFunctionError` whose message the embedder wrote) gives
// the guest a fixed code — UNAVAILABLE, or the HostFunctionError's code — with Membrane's fixed
// text. Nothing of the thrown value reaches the guest's result, stdout, stderr or error, the HTTP
// answer, or the audit record a tenant can read; the embedder's `onHostFunctionError` hook (host
// side) receives it.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { HostFunctionError, type HostFailure } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { hostGuest } from '../helpers/host-functions.ts';
import { testEngine } from '../helpers/engine.ts';
import { call, testServer } from '../helpers/http.ts';
import { tempDir } from '../helpers/tmp.ts';

const home = tempDir('membrane-hostfn-throws-');
process.env['MEMBRANE_HOME'] = home;
const databaseFile = join(home, 'engine.sqlite');
process.env['MEMBRANE_AUDIT_KEY'] ??= 'c'.repeat(64);

const SECRET = 'hunter2-db-password';
const PATH = '/srv/acme/private/orders.sqlite';
const failures: HostFailure[] = [];
const engine = testEngine({
  poolSize: 1,
  brokers: { databaseFile },
  onHostFunctionError: (f) => failures.push(f),
  hostFunctions: {
    'acme:orders': {
      crash: () => {
        throw new Error(`cannot open ${PATH}: password ${SECRET} rejected`);
      },
      crashAsync: async () => {
        await new Promise((r) => setTimeout(r, 5));
        throw new TypeError(`${SECRET} at ${PATH}`);
      },
      crashValue: () => {
        // eslint-disable-next-line @typescript-eslint/only-throw-error
        throw { path: PATH, secret: SECRET };
      },
      unserializable: () => ({ big: 10n, note: SECRET }) as never,
      cyclic: () => {
        const o: Record<string, unknown> = { note: SECRET };
        o['self'] = o;
        return o as never;
      },
      refuse: () => {
        throw new HostFunctionError('DENIED', `tenant may not see ${PATH} (${SECRET})`);
      },
    },
  },
});

const leaks = (...texts: unknown[]): boolean => texts.some((t) => JSON.stringify(t ?? '').includes(SECRET) || JSON.stringify(t ?? '').includes(PATH) || JSON.stringify(t ?? '').includes('/srv/'));

test('core guest: every kind of throw is a bare error code, nothing else', async () => {
  const expected: Record<string, number> = {
    crash: GUEST_ERR.UNAVAILABLE,
    crashAsync: GUEST_ERR.UNAVAILABLE,
    crashValue: GUEST_ERR.UNAVAILABLE,
    unserializable: GUEST_ERR.UNAVAILABLE,
    cyclic: GUEST_ERR.UNAVAILABLE,
    refuse: GUEST_ERR.DENIED,
  };
  for (const [fn, code] of Object.entries(expected)) {
    const g = await hostGuest('acme:orders', fn, '{}');
    const r = await engine.run(g.bytes, { invoke: 'call', args: [2, 4096], tenant: 'leak-t', caps: ['acme:orders'] });
    assert.equal(r.ok, true, r.error?.message);
    assert.equal(r.result, code, fn);
    assert.equal(r.stdout, '');
    assert.ok(!leaks(r), `${fn} leaked: ${JSON.stringify(r)}`);
  }
});

test('JS and Python: a MembraneError with the fixed text; the host message, stack and path stay out', async () => {
  for (const fn of ['crash', 'crashAsync', 'crashValue', 'unserializable', 'refuse']) {
    const js = await engine.exec({
      language: 'js',
      tenant: 'leak-t',
      caps: ['acme:orders'],
      code: `acme_orders.${fn}({}).then(() => 'resolved', (e) => [e.name, e.code, e.message, String(e.stack ?? ''), JSON.stringify(Object.getOwnPropertyNames(e))])`,
    });
    assert.equal(js.ok, true, js.error?.message);
    const [name, code, message] = js.result as string[];
    assert.equal(name, 'MembraneError');
    assert.equal(code, fn === 'refuse' ? 'DENIED' : 'UNAVAILABLE');
    assert.equal(message, `membrane acme:orders.${fn}: ${fn === 'refuse' ? 'denied by policy' : 'unavailable'} (${code})`);
    assert.ok(!leaks(js), `js ${fn} leaked: ${JSON.stringify(js)}`);
  }
  const py = await engine.exec({
    language: 'python',
    tenant: 'leak-t',
    caps: ['acme:orders'],
    code: 'import membrane, traceback\nout = []\nfor f in ("crash", "crashValue", "refuse"):\n    try:\n        getattr(acme_orders, f)({})\n    except membrane.MembraneError as e:\n        out.append([e.code, str(e), traceback.format_exc()])\nout',
  });
  assert.equal(py.ok, true, py.error?.message);
  assert.deepEqual((py.result as string[][]).map((r) => r[0]), ['UNAVAILABLE', 'UNAVAILABLE', 'DENIED']);
  assert.ok(!leaks(py), `python leaked: ${JSON.stringify(py)}`);
  // An uncaught one ends the snippet with the same fixed text.
  const uncaught = await engine.exec({ language: 'python', tenant: 'leak-t', caps: ['acme:orders'], code: 'acme_orders.crash({})' });
  assert.equal(uncaught.ok, false);
  assert.ok(!leaks(uncaught), `python uncaught leaked: ${JSON.stringify(uncaught)}`);
});

test('the audit records a tenant can read name the function and the code only; the embedder’s hook got the error', async () => {
  const t = await testServer({ engine, databaseFile });
  const token = t.server.api.tokens.create('leak-t', 'compute', ['acme:orders']).token;
  const r = await call(t.url, '/v1/exec', token, 'POST', { language: 'js', code: 'acme_orders.crash({})' });
  assert.ok(!leaks(r.text), `HTTP leaked: ${r.text}`);
  assert.equal(r.body.ok, false);
  const audit = await call(t.url, '/v1/audit?kind=denied&limit=1000', token);
  assert.equal(audit.status, 200, audit.text);
  const mine = (audit.body.records as { detail: Record<string, unknown> }[]).filter((x) => x.detail['broker'] === 'acme:orders');
  assert.ok(mine.length >= 6, `audit records: ${mine.length}`);
  assert.ok(!leaks(audit.text), `audit leaked: ${audit.text.slice(0, 500)}`);
  assert.deepEqual(Object.keys(mine[0]!.detail).sort(), ['broker', 'code', 'op', 'why']);
  assert.ok(failures.some((f) => f.tenant === 'leak-t' && f.cap === 'acme:orders' && f.function === 'crash' && String((f.error as Error).message).includes(SECRET)));
  assert.ok(!failures.some((f) => f.function === 'refuse'), 'a deliberate HostFunctionError is not reported as a failure');
});
