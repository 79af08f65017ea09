// Granted means linked, for components: a component importing one interface more than its grant's
// world is refused before any of its code runs — not transpiled, no worker, no start function
// (kv.wat's core start function prints "started"; the tcp component's run would return at once).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { component } from '../helpers/components.ts';
import { transpileCount } from '../../src/lanes/component/index.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-home-');
const engine = testEngine({ poolSize: 1 });

test('membrane:engine/kv under compute is LINK_UNSATISFIED naming the import, the cap and the profiles; nothing ran', async () => {
  const before = transpileCount();
  const r = await engine.run(component('kv'), { profile: 'compute' });
  assert.equal(r.ok, false);
  assert.equal(r.error?.code, 'LINK_UNSATISFIED');
  assert.match(r.error?.message ?? '', /membrane:engine\/kv@0\.1\.0/);
  const missing = (r.error?.details as { missing: { import: string; cap: string; profiles: string[] }[] }).missing;
  assert.deepEqual(missing.map((m) => [m.import, m.cap, m.profiles]), [['membrane:engine/kv@0.1.0', 'kv', ['minimal', 'network', 'posix']]]);
  assert.equal(r.stdout, '', 'the start function that prints "started" never ran');
  assert.equal(r.fuelUsed, 0);
  assert.equal(transpileCount(), before, 'a refused component is never handed to jco');
  // The same bytes under a grant that has kv do run: the refusal was the world, not the component.
  const ok = await engine.run(component('kv'), { profile: 'minimal' });
  assert.match(ok.stdout, /^started\n/);
});

test('wasi:sockets/tcp under minimal (which grants only brokered one-shot tcp) is refused at link time', async () => {
  const r = await engine.run(component('tcp'), { profile: 'minimal' });
  assert.equal(r.error?.code, 'LINK_UNSATISFIED');
  assert.match(r.error?.message ?? '', /wasi:sockets\/tcp@0\.2\.0/);
  const missing = (r.error?.details as { missing: { cap: string; profiles: string[] }[] }).missing;
  assert.equal(missing[0]?.cap, 'net');
  assert.deepEqual(missing[0]?.profiles, ['network', 'posix']);
  assert.equal(r.fuelUsed, 0);
  // Where net is granted, wasi:sockets/tcp is linked (each connection one brokered exchange
  // through the network guard: test/security/component-socket-ssrf.test.ts); this one's run
  // returns at once.
  const net = await engine.run(component('tcp'), { profile: 'network' });
  assert.equal(net.ok, true, JSON.stringify(net.error));
});
