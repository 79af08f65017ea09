// The Python lane's contract (issue #6): stdout, the last expression's value, `context`, errors,
// the tier, the `membrane` module's caps, and pool hits after warm().
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PythonLane, findBwrap } from '../../src/lanes/python/index.ts';
import type { ExecRequest } from '../../src/lanes/types.ts';

const lane = new PythonLane({ poolSize: 2, cacheDir: false });
const req = (code: string, extra: Partial<ExecRequest> = {}): ExecRequest => ({
  language: 'python',
  code,
  timeoutMs: 10_000,
  fuel: 1e10,
  memoryBytes: 128 << 20,
  caps: [],
  ...extra,
});

before(() => lane.warm());
after(() => lane.close());

test('print(sum(range(10))) → stdout 45, and a pool hit after warm()', async () => {
  const r = await lane.exec(req('print(sum(range(10)))'));
  assert.equal(r.stdout, '45\n');
  assert.equal(r.ok, true);
  assert.equal(r.poolHit, true);
  assert.ok(r.fuelUsed > 0);
  assert.ok(lane.stats().poolHits >= 1);
});

test('6*7 → result 42; None → no result', async () => {
  assert.equal((await lane.exec(req('6*7'))).result, 42);
  const r = await lane.exec(req('x = 1'));
  assert.equal(r.ok, true);
  assert.equal('result' in r, false);
});

test('context is visible and read-only', async () => {
  const r = await lane.exec(req("[context['a'], context['b'][1], type(context).__name__]", { context: { a: 5, b: [1, 2] } }));
  assert.deepEqual(r.result, [5, 2, 'mappingproxy']);
  const w = await lane.exec(req("context['a'] = 1", { context: { a: 5 } }));
  assert.equal(w.error?.code, 'GUEST_EXCEPTION');
  assert.match(w.error?.message ?? '', /TypeError/);
});

test('an exception → GUEST_EXCEPTION with its last line and the snippet frame', async () => {
  const r = await lane.exec(req("raise ValueError('nope')"));
  assert.equal(r.error?.code, 'GUEST_EXCEPTION');
  assert.equal(r.error?.message, 'ValueError: nope');
  assert.deepEqual(r.error?.details?.['stack'], [{ file: '<snippet>', line: 1, column: 1, function: '<module>' }]);
});

test('membrane has an attribute per granted cap and none for others; its calls reach the power server', async () => {
  const seen: { power: string; args: readonly unknown[]; fuelUsed?: number }[] = [];
  const powers = async (q: { power: string; args: readonly unknown[]; fuelUsed?: number }) => (seen.push(q), { ok: true as const, value: 'pong' });
  const r = await lane.exec(req("import membrane\n[hasattr(membrane, 'kv'), hasattr(membrane, 'net'), membrane.browse.fetch('https://example.test/')]", { caps: ['net', 'browse'], powers }));
  assert.deepEqual(r.result, [false, true, 'pong'], JSON.stringify(r));
  assert.deepEqual(seen.map(({ power, args }) => ({ power, args })), [{ power: 'browse.fetch', args: ['https://example.test/'] }]);
  // The child adds the snippet's fuel so far (its meter's, not the guest's JSON) to every request.
  assert.ok((seen[0]?.fuelUsed ?? 0) > 0, JSON.stringify(seen));
  const bare = await lane.exec(req("import membrane\nhasattr(membrane, 'net')", { caps: ['net'] }));
  assert.equal(bare.result, false);
  assert.ok(bare.warnings.some((w) => /no power server/.test(w)));
});

test('the tier is reported; without bwrap a warning says so', async () => {
  const tier = lane.stats().tier;
  assert.equal(tier, findBwrap() === null ? 'os_process' : 'os_process+bwrap');
  // `npm run test:system` runs this file again where bubblewrap must work.
  if (process.env['MEMBRANE_EXPECT_BWRAP'] === '1') assert.equal(tier, 'os_process+bwrap', 'bubblewrap is installed but does not work here');
  const r = await lane.exec(req('1'));
  if (tier === 'os_process') assert.ok(r.warnings.some((w) => /bubblewrap/.test(w)));
  else assert.deepEqual(r.warnings, []);
});
