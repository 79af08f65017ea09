// Attack: one tenant floods the C/C++ lane (`exec` with language c, `engine.build`) to hold the
// engine's workers and starve other tenants. Builds used to take no turn from the tenant
// scheduler at all: a tenant capped at one turn ran eight builds at once, and another tenant's
// 15 ms run waited 1.15 s behind them. Now a build (and a C exec: compile, link and run in one
// turn) is admitted like every other call: one tenant's builds beyond its cap wait for its own
// turns — ending OVERLOADED when not admitted within their budget — while another tenant's calls
// are admitted at once. The toolchain's one-time warm-up is the engine's, held by no tenant.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { HELLO_C, TOOLCHAIN_CACHE } from '../helpers/toolchain.ts';
import { tempDir } from '../helpers/tmp.ts';
import { wat } from '../helpers/wat.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-c-flood-');
let engine: Engine;

before(async () => {
  engine = createEngine({ poolSize: 2, maxWorkers: 2, maxWorkersPerTenant: 1, cacheDir: TOOLCHAIN_CACHE, operatorLimits: { posix: { timeoutMs: 300_000 } } });
  const warm = await engine.exec({ language: 'c', code: HELLO_C, timeoutMs: 240_000, tenant: 'warm' }); // toolchain ready outside the measured part
  assert.ok(warm.ok, JSON.stringify(warm.error));
});
after(() => engine.close());

test('C execs beyond a tenant\'s cap wait for its turns (OVERLOADED past their budget); another tenant runs meanwhile', async () => {
  const hostile = Array.from({ length: 12 }, () => engine.exec({ language: 'c', code: HELLO_C, tenant: 'hostile', timeoutMs: 1_000 }));
  await new Promise((r) => setTimeout(r, 100));
  const honest = await Promise.all([engine.run(await wat('noop'), { tenant: 'honest', invoke: 'noop' }), engine.exec({ language: 'js', code: '6 * 7', tenant: 'honest' })]);
  assert.ok(honest[0].ok, JSON.stringify(honest[0].error));
  assert.equal(honest[1].ok, true, JSON.stringify(honest[1].error));
  const outs = await Promise.all(hostile);
  const codes = outs.map((o) => (o.ok ? 'ok' : o.error!.code));
  // Serialized by the tenant's one turn: twelve builds (≥ ~0.13 s each, even on an idle machine) cannot all be admitted within
  // 1 s. Before the fix every one ran at once and none was ever OVERLOADED.
  const overloaded = outs.filter((o) => !o.ok && o.error!.code === 'OVERLOADED');
  assert.ok(overloaded.length >= 1, `codes ${codes.join(',')}`);
  for (const o of overloaded) assert.match(o.error!.message, /not admitted within/);
  for (const o of outs) assert.ok(o.ok || ['OVERLOADED', 'TIMEOUT'].includes(o.error!.code), `codes ${codes.join(',')}`);
});

test('engine.build takes a turn too: builds beyond a tenant\'s cap wait for its turn (not for a worker), OVERLOADED past their budget', async () => {
  const flood = Promise.all(Array.from({ length: 12 }, () => engine.build({ sources: { 'hello.c': HELLO_C }, tenant: 'builder', timeoutMs: 1_000 })));
  await new Promise((r) => setTimeout(r, 100));
  const honest = await engine.exec({ language: 'js', code: '6 * 7', tenant: 'honest' });
  assert.equal(honest.ok, true, JSON.stringify(honest.error));
  const builds = await flood;
  const codes = builds.map((b) => (b.ok ? 'ok' : `${b.error!.code}: ${b.error!.message}`));
  // Refused by the tenant's turn, not by a worker shortage ("every guest worker is busy", which is
  // what the flood met before: its builds took both workers).
  assert.ok(codes.some((c) => /^OVERLOADED: .*not admitted within/.test(c)), codes.join(' | '));
  for (const c of codes) assert.ok(c === 'ok' || /^(OVERLOADED: .*not admitted within|TIMEOUT)/.test(c), codes.join(' | '));
});
