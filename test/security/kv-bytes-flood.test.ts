// Attack: fill the disk through kv — the 10 000-key quota alone let one tenant store 10 000
// values of 1 MiB (10 GiB) in engine.sqlite. Now a tenant's keys and values together stop at its
// byte quota (MAX_TENANT_KV_BYTES, 64 MiB charged), refused with QUOTA and audited once; growing
// a value counts, shrinking or deleting gives bytes back; engine.sqlite stays under the quota.
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { KV_MAX_VALUE_BYTES } from '../../src/storage/kv.ts';
import { MAX_TENANT_KV_BYTES, STORE_ITEM_OVERHEAD } from '../../src/storage/store-quotas.ts';
import { tempDir } from '../helpers/tmp.ts';

/** Page slack, interior pages and the WAL (~4 MiB between checkpoints plus one value). */
const FILE_OVERHEAD = 16 * 1024 * 1024;

let engine: Engine;
let home: string;

before(() => {
  home = tempDir('membrane-kv-flood-');
  process.env['MEMBRANE_HOME'] = home;
  process.env['MEMBRANE_AUDIT_KEY'] = '6b'.repeat(32);
  engine = createEngine({ poolSize: 1 });
});
after(() => engine.close());

async function js(tenant: string, code: string): Promise<unknown> {
  // The quota is the wall under test, not time: 8 MiB of puts can take seconds on a loaded CI disk,
  // so the puts run under network's 30 s budget rather than minimal's 5 s.
  const r = await engine.exec({ language: 'js', code, profile: 'network', tenant });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  return r.result;
}

/** Put `count` values of `size` bytes under keys `${prefix}${first + i}`; stop at the first refusal. */
const fill = (tenant: string, prefix: string, first: number, count: number, size: number) =>
  js(tenant, `const v = 'v'.repeat(${size}); let stored = 0, code = null;
    for (let i = 0; i < ${count}; i++) { try { kv.put('${prefix}' + (${first} + i), v); stored++; } catch (e) { code = e.code; break; } }
    ({ stored, code })`) as Promise<{ stored: number; code: string | null }>;

test(`1 MiB values stop at the tenant's ${MAX_TENANT_KV_BYTES / 1048576} MiB kv quota with QUOTA; engine.sqlite stays under it`, async () => {
  const perValue = KV_MAX_VALUE_BYTES + 'k-10'.length + STORE_ITEM_OVERHEAD;
  const fits = Math.floor(MAX_TENANT_KV_BYTES / perValue);
  const firstWindow = Math.floor(Date.now() / 60_000);
  let stored = 0;
  let code: string | null = null;
  while (code === null && stored <= fits) {
    const r = await fill('hoarder', 'k-', 10 + stored, 8, KV_MAX_VALUE_BYTES);
    stored += r.stored;
    code = r.code;
  }
  assert.equal(code, 'QUOTA');
  assert.equal(stored, fits);
  const file = join(home, 'engine.sqlite');
  const size = (f: string) => {
    try {
      return statSync(f).size;
    } catch {
      return 0;
    }
  };
  const bytes = size(file) + size(`${file}-wal`) + size(`${file}-shm`);
  process.stdout.write(`engine.sqlite (+ -wal, -shm) after the kv flood: ${(bytes / 1048576).toFixed(1)} MiB for ${stored} values of 1 MiB; quota ${MAX_TENANT_KV_BYTES / 1048576} MiB + ${FILE_OVERHEAD / 1048576} MiB allowance\n`);
  assert.ok(bytes <= MAX_TENANT_KV_BYTES + FILE_OVERHEAD, `engine.sqlite holds ${bytes} bytes`);

  // At the quota, rewriting a value with one of the same size is still allowed (it adds nothing).
  assert.equal(await js('hoarder', `kv.put('k-10', 'w'.repeat(${KV_MAX_VALUE_BYTES})); kv.get('k-10').slice(0, 3)`), 'www');
  // Deleting gives the bytes back.
  assert.equal(await js('hoarder', "[kv.delete('k-11'), kv.delete('k-12')].join()"), 'true,true');
  assert.deepEqual(await fill('hoarder', 'again-', 0, 3, KV_MAX_VALUE_BYTES), { stored: 2, code: 'QUOTA' });
  // Another tenant is untouched.
  assert.deepEqual(await fill('neighbour', 'k-', 0, 2, KV_MAX_VALUE_BYTES), { stored: 2, code: null });

  const log = AuditLog.open(file);
  const records = log.tail({ tenant: 'hoarder', kind: 'denied', limit: 1000 }).map((r) => r.detail).filter((d) => d['code'] === 'QUOTA');
  log.close();
  // One record per quota and rate window (aligned to the clock), however many puts were refused:
  // a flood that straddles a window boundary leaves one in each window it crossed.
  const windows = Math.floor(Date.now() / 60_000) - firstWindow + 1;
  assert.ok(records.length >= 1 && records.length <= windows, `${records.length} records over ${windows} window(s): ${JSON.stringify(records)}`);
  assert.deepEqual([records[0]!['broker'], records[0]!['op'], records[0]!['quota'], records[0]!['limit']], ['kv', 'kv_put', 'kv-bytes', MAX_TENANT_KV_BYTES]);
});

test('an operator-lowered kv byte quota holds exactly: key bytes and the per-key overhead count, growing a value counts, shrinking gives back', async () => {
  const small = createEngine({ poolSize: 1, brokers: { databaseFile: join(home, 'small.sqlite'), quotas: { kvBytes: 1000, kvKeys: 50 } } });
  const run = async (code: string) => (await small.exec({ language: 'js', code, profile: 'minimal', tenant: 't' })).result;
  try {
    // 10 keys of 'kNN' (3 bytes) + 30-byte values + 64 overhead = 97 each (970): the 11th is refused.
    assert.deepEqual(await run("let n = 0; try { for (let i = 10; ; i++) { kv.put('k' + i, 'x'.repeat(30)); n++; } } catch (e) { [n, e.code] }"), [10, 'QUOTA']);
    // 30 bytes left: growing k10 by 70 is refused and keeps the old value.
    assert.deepEqual(await run("try { kv.put('k10', 'y'.repeat(100)); 'stored' } catch (e) { [e.code, kv.get('k10').length] }"), ['QUOTA', 30]);
    // Shrinking k10 to 1 byte frees 29: 59 left, so it may grow to exactly 60 bytes, not 61.
    assert.deepEqual(await run("kv.put('k10', 'z'); const r = []; try { kv.put('k10', 'y'.repeat(61)); r.push('61 stored') } catch (e) { r.push(e.code) } kv.put('k10', 'y'.repeat(60)); r.push(kv.get('k10').length); r"), ['QUOTA', 60]);
    // A delete gives back key, value and overhead: room for one more key of the same size.
    assert.deepEqual(await run("kv.delete('k11'); const r = []; kv.put('k99', 'x'.repeat(30)); try { kv.put('k98', 'x') } catch (e) { r.push(e.code) } r"), ['QUOTA']);
  } finally {
    await small.close();
  }
});
