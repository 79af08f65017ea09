// The JS lane's half of issue #12 finding 5: a snippet that installs `Error.prepareStackTrace`,
// reads `.stack` from its own errors, from a refused power call or from a failed host function,
// sees QuickJS frames of `<snippet>` and `membrane:prelude` only — never a CallSite of the
// host, a host path or a host message.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine({ poolSize: 1 });
const HOST = /\/work\/|\/home\/|\/tmp\/|node_modules|file:\/\/|\.[cm]?[jt]s:\d|wasm-function|worker_threads|node:/;

function assertNoHostDetail(r: object): void {
  const all = JSON.stringify(r).replace(/(<snippet>|membrane:prelude):\d+(:\d+)?/g, '');
  assert.ok(!HOST.test(all), `host detail visible: ${all.slice(0, 2000)}`);
}

test('Error.prepareStackTrace is never handed host CallSites', async () => {
  const r = await engine.exec({
    language: 'js',
    profile: 'minimal',
    code: `const seen = [];
      Error.prepareStackTrace = (e, frames) => { seen.push(Array.isArray(frames) ? frames.map((f) => String(f.getFileName?.())) : String(frames)); return 'hooked'; };
      const own = new Error('own').stack;
      let power; try { kv.put('', 'v'); } catch (e) { power = [e.name, e.code, String(e.stack)]; }
      [own, power, seen]`,
  });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const [own, power, seen] = r.result as [string, string[], unknown[]];
  assert.match(own, /<snippet>/);
  assert.equal(power[0], 'MembraneError');
  assert.doesNotMatch(power[2]!, /at (?!call |put |<eval>)/, 'only prelude and snippet frames');
  for (const frames of seen) for (const f of frames as string[]) assert.match(f, /^(<snippet>|membrane:prelude|undefined)$/);
  assertNoHostDetail(r);
});

test('hostile console values and a null dereference show no host frame or message', async () => {
  const r = await engine.exec({
    language: 'js',
    profile: 'compute',
    code: `const out = [];
      for (const f of [() => console.log({ toJSON() { throw new TypeError('mine'); } }), () => console.log(Symbol('s')), () => { null.x; }]) {
        try { f(); out.push('ok'); } catch (e) { out.push(String(e.name) + ': ' + String(e.message) + ' | ' + String(e.stack)); }
      }
      out`,
  });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assertNoHostDetail(r);
});

test('an uncaught error and a syntax error report snippet-relative text only', async () => {
  const thrown = await engine.exec({ language: 'js', profile: 'compute', code: 'function f() { throw new RangeError("deep") } f()' });
  assert.equal(thrown.error?.code, 'GUEST_EXCEPTION');
  assertNoHostDetail(thrown);
  const syntax = await engine.exec({ language: 'ts', profile: 'compute', code: 'let x: = ;' });
  assert.equal(syntax.ok, false);
  assertNoHostDetail(syntax);
});
