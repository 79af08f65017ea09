// The attack: a guest on the os_process tier — or whoever owns its child process — looks for the
// operator's host caps its call was not granted: the functions themselves, their names, their
// settings. The child holds no operator code: a call's request carries only the caps it was
// granted — each one's function names and argument size cap, never a function, a rate or another
// cap — so a child's engine has never heard of an ungranted cap: a module importing one is
// LINK_UNSATISFIED (its reason: this engine defines no such cap), a JS or Python snippet has no
// global for it, and its function never runs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hostFunctionTable } from '../../src/engine/os-process/host-proxy.ts';
import { hostGuest } from '../helpers/host-functions.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';
import { testBrokers } from '../helpers/forged-child.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-os-hostfn-ungranted-');
const OS = { tier: 'os_process', bwrapPath: '' } as const;
let leaked = 0;
const definitions = {
  'acme:orders': { functions: { get: () => 'order' }, maxArgBytes: 1000, maxResultBytes: 2000, rate: { limit: 77, windowMs: 60_000 }, description: 'orders (operator note: see /srv/acme)' },
  'acme:secret': {
    functions: {
      rotateMasterKey: () => {
        leaked++;
        return 'sk-operator-0000';
      },
    },
  },
};
const engine = testEngine({ poolSize: 1, hostFunctions: definitions });

test("what a call's request tells its child: the granted caps' names, function names and argument caps — nothing else", () => {
  const brokers = testBrokers([], {}, definitions);
  const table = hostFunctionTable(['acme:orders'], brokers);
  assert.deepEqual(table, { 'acme:orders': { fns: ['get'], maxArgBytes: 1000 } });
  const text = JSON.stringify(table);
  for (const absent of ['acme:secret', 'rotateMasterKey', 'sk-operator', 'leaked', '77', '/srv', 'description']) assert.ok(!text.includes(absent), absent);
  assert.equal(hostFunctionTable([], brokers), undefined, 'a call granted no host cap: nothing at all');
});

test('in the child an ungranted cap does not exist: LINK_UNSATISFIED for a module, no global for JS or Python, the function never runs', async () => {
  const g = await hostGuest('acme:secret', 'rotateMasterKey', '');
  for (const caps of [['acme:orders'], [], undefined]) {
    const r = await engine.run(g.bytes, { invoke: 'call', args: [0, 64], ...(caps ? { caps } : {}), ...OS });
    assert.equal(r.error?.code, 'LINK_UNSATISFIED', JSON.stringify(r.error));
    // The child's engine was never told of the cap (on the instance tier the reason is "not granted").
    assert.match(r.error!.message, /acme:secret\.rotateMasterKey: no capability grants this \(the engine defines no such host function capability\)/);
  }
  const js = await engine.exec({ language: 'js', caps: ['acme:orders'], code: '[typeof acme_secret, Object.getOwnPropertyNames(globalThis).filter((k) => k.startsWith("acme")), Object.keys(acme_orders)]', ...OS });
  assert.deepEqual(js.result, ['undefined', ['acme_orders'], ['get']]);
  const py = await engine.exec({ language: 'python', caps: ['acme:orders'], code: 'import membrane\n[k for k in list(globals()) + dir(membrane) if k.startswith("acme")]', timeoutMs: 20_000, ...OS });
  assert.equal(py.ok, true, JSON.stringify(py.error));
  assert.deepEqual([...new Set(py.result as string[])], ['acme_orders']);
  assert.equal(leaked, 0);
});
