// Attack: throw an error object built to break the host's report. Getters for `name`, `message`
// or `stack` that throw or never return, a Proxy whose every trap throws, a 16 MiB message and
// name, a stack text of megabytes, tampered intrinsics the report's reader might use
// (`String.prototype.slice`, `Array.prototype.toJSON`, `JSON.stringify`, `Error.prototype`). The
// host must always answer — a getter that never returns ends TIMEOUT at the call's deadline, never
// a hung host — and a report stays bounded: name ≤ 128 characters, message ≤ 4 KiB, ≤ 32 frames.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { JsLane } from '../../src/lanes/js/index.ts';
import type { ExecRequest, ExecResult } from '../../src/lanes/types.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { jsRequest } from '../helpers/js-request.ts';

const lane = new JsLane({ poolSize: 1, cacheDir: false });
const req = (code: string, more: Partial<ExecRequest> = {}): ExecRequest => jsRequest(code, { memoryBytes: 128 * 1024 * 1024, ...more });
before(() => lane.warm());
after(() => lane.close());

function bounded(r: ExecResult): { name: string; message: string; stack: unknown[] } {
  assert.equal(r.error?.code, 'GUEST_EXCEPTION', JSON.stringify(r.error).slice(0, 500));
  const d = r.error!.details as { name: string; message: string; stack: unknown[] };
  assert.equal(typeof d.name, 'string');
  assert.equal(typeof d.message, 'string');
  assert.ok(d.name.length <= 128, `name ${d.name.length}`);
  assert.ok(Buffer.byteLength(d.message) <= 4096, `message ${Buffer.byteLength(d.message)}`);
  assert.ok(Array.isArray(d.stack) && d.stack.length <= 32);
  assert.ok(Buffer.byteLength(r.error!.message) <= 4096 + 128 + 2);
  return d;
}

test('name, message and stack getters that throw still give a report', async () => {
  const d = bounded(
    await lane.exec(
      req(`const e = new TypeError('x');
        for (const k of ['name', 'message', 'stack']) Object.defineProperty(e, k, { get() { throw new Error('getter ' + k) } });
        throw e`),
    ),
  );
  assert.equal(d.name, 'Error');
  assert.equal(d.message, '');
});

test('a message getter that never returns ends TIMEOUT at the deadline; the host does not hang', async () => {
  for (const k of ['name', 'message', 'stack']) {
    const t0 = performance.now();
    const r = await lane.exec(req(`const e = new Error('x'); Object.defineProperty(e, ${JSON.stringify(k)}, { get() { for (;;) {} } }); throw e`, { timeoutMs: 500 }));
    assert.equal(r.error?.code, 'TIMEOUT', k);
    assert.ok(performance.now() - t0 < 500 + LOAD_SLACK_MS, `${k}: ${performance.now() - t0} ms`);
  }
  const f = await lane.exec(req("const e = new Error('x'); Object.defineProperty(e, 'message', { get() { for (;;) {} } }); throw e", { fuel: 1e8 }));
  assert.equal(f.error?.code, 'FUEL_EXHAUSTED');
});

test('a Proxy whose every trap throws, and a revoked Proxy, still give a report', async () => {
  const traps = "{ get() { throw 1 }, getPrototypeOf() { throw 2 }, has() { throw 3 }, ownKeys() { throw 4 }, getOwnPropertyDescriptor() { throw 5 } }";
  bounded(await lane.exec(req(`throw new Proxy(new Error('p'), ${traps})`)));
  bounded(await lane.exec(req(`throw new Proxy(function () {}, ${traps})`)));
  bounded(await lane.exec(req("const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); throw proxy")));
});

test('a 16 MiB message and name and a megabytes-long stack are cut inside the sandbox', async () => {
  const d = bounded(await lane.exec(req("const e = new Error('m'.repeat(16 << 20)); e.name = 'N'.repeat(16 << 20); throw e")));
  assert.equal(d.name, 'N'.repeat(128));
  assert.equal(d.message, 'm'.repeat(4096));
  const wide = bounded(await lane.exec(req("throw new Error('é'.repeat(5000))")));
  assert.equal(wide.message, 'é'.repeat(2048), 'cut on a character boundary within 4 KiB');
  const s = bounded(await lane.exec(req("const e = new Error('s'); e.stack = '    at f (<snippet>:1:1)\\n'.repeat(200000); throw e")));
  assert.equal(s.stack.length, 32);
  const o = bounded(await lane.exec(req("throw { big: 'b'.repeat(8 << 20) }")));
  assert.equal(o.name, 'object');
});

test('tampered intrinsics cannot inflate or break the report', async () => {
  const d = bounded(
    await lane.exec(
      req(`String.prototype.slice = function () { return 'z'.repeat(1 << 24) };
        String.prototype.substring = String.prototype.slice;
        Array.prototype.toJSON = function () { return 'y'.repeat(1 << 24) };
        String.prototype.toJSON = Array.prototype.toJSON;
        JSON.stringify = () => 'x'.repeat(1 << 24);
        Object.defineProperty(Error.prototype, 'name', { get() { throw new Error('proto') } });
        Error.prototype.toString = () => { for (;;) {} };
        throw new Error('${'q'.repeat(5000)}')`),
    ),
  );
  assert.equal(d.message, 'q'.repeat(4096));
  assert.equal(d.name, 'Error');
  const e = bounded(await lane.exec(req("Object.setPrototypeOf(Error.prototype, new Proxy({}, { get() { throw 0 } })); throw new RangeError('r')")));
  assert.equal(e.message, 'r');
});

test('an object whose toString never returns, thrown as a non-Error, ends TIMEOUT', async () => {
  const r = await lane.exec(req("throw { toString() { for (;;) {} }, toJSON() { for (;;) {} } }", { timeoutMs: 500 }));
  assert.equal(r.error?.code, 'TIMEOUT');
});
