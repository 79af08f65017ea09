// The JS/TS lane (src/lanes/js): results, output, context, errors, promises, the pool, freshness.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { JsLane } from '../../src/lanes/js/index.ts';
import type { ExecRequest } from '../../src/lanes/types.ts';
import { jsRequest } from '../helpers/js-request.ts';

const lane = new JsLane({ poolSize: 2, cacheDir: false });
const req = (code: string, more: Partial<ExecRequest> = {}): ExecRequest => jsRequest(code, { fuel: 1e9, ...more });

before(() => lane.warm());
after(() => lane.close());

test('1+1 → 2, with fuel counted', async () => {
  const r = await lane.exec(req('1+1'));
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.result, 2);
  assert.ok(r.fuelUsed > 0);
  assert.equal(r.stdout, '');
});

test('TypeScript is stripped inside the sandbox: const x: number = 2; x * 21 → 42', async () => {
  const r = await lane.exec(req('const x: number = 2; x * 21', { language: 'ts' }));
  assert.equal(r.result, 42, JSON.stringify(r));
  const i = await lane.exec(req('interface P { a: number } function f(p: P): number { return p.a * 2 } f({ a: 4 })', { language: 'ts' }));
  assert.equal(i.result, 8, JSON.stringify(i));
});

test('a TypeScript syntax error is a GUEST_EXCEPTION SyntaxError at its line and column', async () => {
  const r = await lane.exec(req('const a = 1;\nconst x: = ;', { language: 'ts' }));
  assert.equal(r.error?.code, 'GUEST_EXCEPTION');
  assert.deepEqual(r.error?.details?.['stack'], [{ file: '<snippet>', line: 2, column: 10, function: '' }]);
  assert.equal(r.error?.details?.['name'], 'SyntaxError');
});

test('console.log and console.error are captured', async () => {
  const r = await lane.exec(req('console.log("hi", 1, {a: [2]}); console.error("oops"); 3'));
  assert.equal(r.stdout, 'hi 1 {"a":[2]}\n');
  assert.equal(r.stderr, 'oops\n');
  assert.equal(r.result, 3);
});

test('context is visible, deep-frozen and read-only', async () => {
  const context = { user: { name: 'ada' }, list: [1, 2] };
  const r = await lane.exec(
    req(
      `'use strict';
       const out = [context.user.name, Object.isFrozen(context), Object.isFrozen(context.user), Object.isFrozen(context.list)];
       try { context.user.name = 'eve'; out.push('wrote') } catch (e) { out.push(e.constructor.name) }
       try { context = 1; out.push('reassigned') } catch (e) { out.push(e.constructor.name) }
       out.push(context.user.name); out`,
      { context },
    ),
  );
  assert.deepEqual(r.result, ['ada', true, true, true, 'TypeError', 'TypeError', 'ada']);
  assert.equal(context.user.name, 'ada');
});

test('a thrown Error is a GUEST_EXCEPTION carrying its name, message and snippet frames only', async () => {
  const r = await lane.exec(req('function f() { throw new Error("boom") } f()'));
  assert.equal(r.ok, false);
  assert.deepEqual(r.error, {
    code: 'GUEST_EXCEPTION',
    message: 'Error: boom',
    details: {
      name: 'Error',
      message: 'boom',
      stack: [
        { file: '<snippet>', line: 1, column: 31, function: 'f' },
        { file: '<snippet>', line: 1, column: 43, function: '<top-level>' },
      ],
    },
  });
  const s = await lane.exec(req('throw "plain"'));
  assert.deepEqual(s.error, { code: 'GUEST_EXCEPTION', message: 'string: plain', details: { name: 'string', message: 'plain', stack: [] } });
  const syntax = await lane.exec(req('let = ;'));
  assert.equal(syntax.error?.code, 'GUEST_EXCEPTION');
  assert.equal(syntax.error?.details?.['name'], 'SyntaxError');
});

test('an object result is JSON-serialized and parsed on the host', async () => {
  const r = await lane.exec(req('({ a: 1, b: [true, null, "x"], c: { d: 2.5 } })'));
  assert.deepEqual(r.result, { a: 1, b: [true, null, 'x'], c: { d: 2.5 } });
});

test('a result JSON cannot carry is absent, with a warning', async () => {
  const f = await lane.exec(req('(function f() {})'));
  assert.equal(f.ok, true);
  assert.equal('result' in f, false);
  assert.ok(f.warnings.some((w) => w.includes('function')));
  const b = await lane.exec(req('10n'));
  assert.equal('result' in b, false);
  assert.ok(b.warnings.length > 0);
  const u = await lane.exec(req('undefined'));
  assert.equal('result' in u, false);
  assert.deepEqual(u.warnings, []);
});

test('a promise result is settled by running pending jobs', async () => {
  const r = await lane.exec(req('(async () => { const a = await Promise.resolve(20); return a + 22 })()'));
  assert.equal(r.result, 42);
  const rej = await lane.exec(req('Promise.reject(new TypeError("nope"))'));
  assert.equal(rej.error?.code, 'GUEST_EXCEPTION');
  assert.equal(rej.error?.message, 'TypeError: nope');
  const never = await lane.exec(req('new Promise(() => {})'));
  assert.equal(never.error?.code, 'GUEST_TRAP');
});

test('after warm() the call is a pool hit, and stats() count hits and misses', async () => {
  await lane.warm();
  const before = lane.stats();
  assert.ok(before.ready >= 2, JSON.stringify(before));
  const r = await lane.exec(req('1'));
  assert.equal(r.poolHit, true);
  assert.equal(lane.stats().poolHits, before.poolHits + 1);
});

test('each call sees a fresh global: a global set in call 1 is absent in call 2', async () => {
  const a = await lane.exec(req('globalThis.leak = 1; var alsoLeak = 2; Array.prototype.evil = 3; typeof leak'));
  assert.equal(a.result, 'number');
  const b = await lane.exec(req('[typeof leak, typeof alsoLeak, typeof [].evil]'));
  assert.deepEqual(b.result, ['undefined', 'undefined', 'undefined']);
});

test('without a power server, granted caps add no globals: kv and fetch stay absent', async () => {
  const r = await lane.exec(req('[typeof kv, typeof fetch, typeof queue, typeof secrets, typeof net]', { caps: ['kv', 'net', 'queue', 'secrets'] }));
  assert.deepEqual(r.result, ['undefined', 'undefined', 'undefined', 'undefined', 'undefined']);
  assert.ok(r.warnings.some((w) => w.includes('kv')));
});

test('a JS lane rejects other languages with POLICY_INVALID', async () => {
  const r = await lane.exec(req('print(1)', { language: 'python' }));
  assert.equal(r.error?.code, 'POLICY_INVALID');
});
