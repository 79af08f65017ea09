// Attack: flood an embedder host function with a huge argument, or make it hand back a huge
// answer. A cap's `maxArgBytes` (default 1 MiB) is the cadence's size step: a larger argument is
// TOO_LARGE before the function is called, and audited; an answer past `maxResultBytes` is
// TOO_LARGE too (audited) and never copied into the guest. The same from a JS snippet, whose
// bridge frame cap (8 MiB) stops a larger request before it is even parsed.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { hostGuest } from '../helpers/host-functions.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

const home = tempDir('membrane-hostfn-oversized-');
process.env['MEMBRANE_HOME'] = home;
process.env['MEMBRANE_AUDIT_KEY'] ??= 'c'.repeat(64);
const databaseFile = join(home, 'engine.sqlite');
const MAX_ARG = 4096;
const MAX_RESULT = 1000;
let called = 0;
const engine = testEngine({
  poolSize: 1,
  brokers: { databaseFile },
  hostFunctions: {
    'acme:orders': {
      functions: {
        // Answers the length of a string argument (so an argument at the cap gets a small answer).
        echo: (args) => {
          called++;
          return typeof args === 'string' ? args.length : args;
        },
        big: (args) => 'x'.repeat(typeof args === 'number' ? args : 10),
      },
      maxArgBytes: MAX_ARG,
      maxResultBytes: MAX_RESULT,
    },
    'acme:defaults': { echo: (args) => ((called++, args)) },
  },
});

function denied(tenant: string): Record<string, unknown>[] {
  const log = AuditLog.open(databaseFile);
  try {
    return log.tail({ tenant, kind: 'denied', limit: 1000 }).map((r) => r.detail as Record<string, unknown>);
  } finally {
    log.close();
  }
}

test('core guest: an argument past maxArgBytes is TOO_LARGE, audited, and the function never runs', async () => {
  const fits = JSON.stringify('a'.repeat(MAX_ARG - 2));
  const over = JSON.stringify('a'.repeat(MAX_ARG - 1));
  const before = called;
  const ok = await hostGuest('acme:orders', 'echo', fits);
  const r1 = await engine.run(ok.bytes, { invoke: 'call', args: [ok.len, 8192], tenant: 'size-t', caps: ['acme:orders'] });
  assert.equal(r1.stdout, String(MAX_ARG - 2));
  const big = await hostGuest('acme:orders', 'echo', over);
  const r2 = await engine.run(big.bytes, { invoke: 'call', args: [big.len, 8192], tenant: 'size-t', caps: ['acme:orders'] });
  assert.equal(r2.result, GUEST_ERR.TOO_LARGE);
  assert.equal(called, before + 1, 'only the argument that fits reached the function');
  const d = denied('size-t').at(-1)!;
  assert.deepEqual([d['broker'], d['op'], d['code'], d['bytes'], d['max']], ['acme:orders', 'echo', 'TOO_LARGE', MAX_ARG + 1, MAX_ARG]);
});

test('core guest: the default cap is 1 MiB; a length past 4 MiB is refused without a copy; one past the memory is INVALID', async () => {
  const over = JSON.stringify('a'.repeat(1024 * 1024));
  const g = await hostGuest('acme:defaults', 'echo', over);
  const r = await engine.run(g.bytes, { invoke: 'call', args: [g.len, 64], tenant: 'size-d', caps: ['acme:defaults'] });
  assert.equal(r.result, GUEST_ERR.TOO_LARGE);
  const wild = await engine.run(g.bytes, { invoke: 'call', args: [0x7fff_ffff, 64], tenant: 'size-d', caps: ['acme:defaults'] });
  assert.equal(wild.result, GUEST_ERR.TOO_LARGE);
  // Too large to carry at all: never copied out of the guest, still refused and audited by the host.
  assert.deepEqual(denied('size-d').map((d) => [d['op'], d['code'], d['bytes']]), [['echo', 'TOO_LARGE', g.len], ['echo', 'TOO_LARGE', 0x7fff_ffff]]);
  const past = await engine.run(g.bytes, { invoke: 'call', args: [1024 * 1024 * 3, 64], tenant: 'size-d', caps: ['acme:defaults'] });
  assert.equal(past.result, GUEST_ERR.INVALID);
});

test('an answer past maxResultBytes is TOO_LARGE (audited) and nothing is written into the guest', async () => {
  const g = await hostGuest('acme:orders', 'big', String(MAX_RESULT));
  const r = await engine.run(g.bytes, { invoke: 'call', args: [g.len, 1 << 16], tenant: 'size-r', caps: ['acme:orders'] });
  assert.equal(r.result, GUEST_ERR.TOO_LARGE);
  assert.equal(r.stdout, '');
  assert.deepEqual(denied('size-r').map((d) => [d['op'], d['code']]), [['big', 'TOO_LARGE']]);
  const fits = await hostGuest('acme:orders', 'big', String(MAX_RESULT - 2));
  const ok = await engine.run(fits.bytes, { invoke: 'call', args: [fits.len, 1 << 16], tenant: 'size-r', caps: ['acme:orders'] });
  assert.equal(ok.result, MAX_RESULT);
});

test('JS snippet: an oversized argument or answer is a TOO_LARGE MembraneError; a request past the frame cap never reaches the host', async () => {
  const before = called;
  const r = await engine.exec({
    language: 'js',
    tenant: 'size-js',
    caps: ['acme:orders'],
    memoryBytes: 64 * 1024 * 1024,
    code: `Promise.all([
      acme_orders.echo('a'.repeat(${MAX_ARG})).catch((e) => e.code),
      acme_orders.big(${MAX_RESULT}).catch((e) => e.code),
      acme_orders.echo('b'.repeat(9 * 1024 * 1024)).catch((e) => e.code),
      acme_orders.echo('ok'),
    ])`,
  });
  assert.equal(r.ok, true, r.error?.message);
  assert.deepEqual(r.result, ['TOO_LARGE', 'TOO_LARGE', 'TOO_LARGE', 2]);
  assert.equal(called, before + 1);
  const codes = denied('size-js').map((d) => [d['op'], d['code']]);
  assert.deepEqual(codes, [['echo', 'TOO_LARGE'], ['big', 'TOO_LARGE'], ['echo', 'TOO_LARGE']]);
});
