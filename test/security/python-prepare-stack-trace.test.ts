// Python cannot read V8 CallSites or host paths through JavaScript's stack machinery. `import js`
// is refused (python-escape.test.ts), but JS objects still reach Python: a JsException's
// `js_error`, and from it EvalError and Error (Object.getPrototypeOf). Through them a snippet
// tries every way to install `Error.prepareStackTrace` (assignment, defineProperty,
// Object.assign, a new prototype, a subclass's own hook), to raise
// `Error.stackTraceLimit`, to use `Error.captureStackTrace`, and to read `.stack`; none yields a
// CallSite, a frame, a host path or Pyodide's instance. Issue #12, finding 5.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PythonLane } from '../../src/lanes/python/index.ts';
import type { ExecResult } from '../../src/lanes/types.ts';

const lane = new PythonLane({ poolSize: 2, cacheDir: false });
before(() => lane.warm());
after(() => lane.close());

const run = (code: string): Promise<ExecResult> => lane.exec({ language: 'python', code, timeoutMs: 15_000, fuel: 1e12, memoryBytes: 64 << 20, caps: [] });

/** Reaches EvalError's instance `err`, `Error` as `E`, Object as `O`; `calls` records the hook's calls. */
const PRELUDE = `from pyodide.ffi import to_js, JsException, create_proxy
O = to_js({}).constructor
def js_error():
    try:
        O.constructor('x')
    except JsException as e:
        return e.js_error
err = js_error()
E = O.getPrototypeOf(err.constructor)
calls = []
def hook(e, frames):
    calls.append([[str(f.getFileName()), repr(f.getThis())] for f in frames])
    return 'hooked'
hook_proxy = create_proxy(hook)
def attempt(f):
    try:
        f()
        return 'done'
    except Exception as e:
        return type(e).__name__
`;

const HOST = /\/work\/|\/home\/|node_modules|file:\/\/|wasm:\/\/|\.m?js:\d|pyodide\.asm|wasm-function/;

function assertNoHostDetail(r: ExecResult): void {
  const all = JSON.stringify({ result: r.result, stdout: r.stdout, stderr: r.stderr, error: r.error });
  assert.ok(!HOST.test(all), `host detail visible: ${all.slice(0, 2000)}`);
}

test('Error is reachable from Python (the premise), but assigning Error.prepareStackTrace is refused and never called', async () => {
  const r = await run(`${PRELUDE}
tries = [attempt(lambda: setattr(E, 'prepareStackTrace', hook_proxy)), attempt(lambda: setattr(E, 'prepareStackTrace', hook))]
e2 = js_error()
[E.name, tries, str(e2.stack), calls]`);
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const [name, tries, stack, calls] = r.result as [string, string[], string, unknown[]];
  assert.equal(name, 'Error');
  assert.deepEqual(tries, ['JsException', 'JsException']);
  assert.deepEqual(calls, []);
  assert.equal(stack, 'EvalError: Code generation from strings disallowed for this context');
  assertNoHostDetail(r);
});

test('Object.defineProperty, Object.assign and Object.setPrototypeOf cannot install the hook', async () => {
  const r = await run(`${PRELUDE}
desc = to_js({'value': hook_proxy, 'writable': True, 'configurable': True}, dict_converter=O.fromEntries)
tries = [
  attempt(lambda: O.defineProperty(E, 'prepareStackTrace', desc)),
  attempt(lambda: O.assign(E, to_js({'prepareStackTrace': hook_proxy}, dict_converter=O.fromEntries))),
  attempt(lambda: O.setPrototypeOf(E, to_js({'prepareStackTrace': hook_proxy}, dict_converter=O.fromEntries))),
]
js_error()
[tries, calls, E.prepareStackTrace is None, O.getOwnPropertyDescriptor(E, 'prepareStackTrace').writable]`);
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const [tries, calls, unset, writable] = r.result as [string[], unknown[], boolean, boolean];
  assert.ok(tries.every((t) => t !== 'done'), JSON.stringify(tries));
  assert.deepEqual(calls, []);
  assert.equal(unset, true);
  assert.equal(writable, false);
  assertNoHostDetail(r);
});

test("a subclass's own prepareStackTrace is never consulted", async () => {
  const r = await run(`${PRELUDE}
EvalError = err.constructor
t = attempt(lambda: setattr(EvalError, 'prepareStackTrace', hook_proxy))
e2 = js_error()
[t, str(e2.stack), calls]`);
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const [, stack, calls] = r.result as [string, string, unknown[]];
  assert.deepEqual(calls, []);
  assert.doesNotMatch(stack, /\n/);
  assertNoHostDetail(r);
});

test('stackTraceLimit stays 0 and captureStackTrace yields no frames', async () => {
  const r = await run(`${PRELUDE}
t1 = attempt(lambda: setattr(E, 'stackTraceLimit', 50))
t2 = attempt(lambda: setattr(E, 'captureStackTrace', hook_proxy))
holder = to_js({}, dict_converter=O.fromEntries)
E.captureStackTrace(holder)
[t1, t2, E.stackTraceLimit, str(holder.stack), str(js_error().stack), calls]`);
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const [t1, t2, limit, captured, stack] = r.result as [string, string, number, string, string];
  assert.equal(t1, 'JsException');
  assert.equal(t2, 'JsException');
  assert.equal(limit, 0);
  assert.doesNotMatch(captured, /\n\s+at /);
  assert.doesNotMatch(stack, /\n\s+at /);
  assertNoHostDetail(r);
});

test('a JavaScript error raised into Python and left uncaught, or printed with its traceback, shows no host path', async () => {
  const printed = await run(`${PRELUDE}
import traceback, sys
try:
    O.constructor('y')
except JsException:
    traceback.print_exc(file=sys.stdout)
try:
    O.defineProperty(E, 'stackTraceLimit', to_js({'value': 99}, dict_converter=O.fromEntries))
except JsException:
    traceback.print_exc(file=sys.stdout)
'printed'`);
  assert.equal(printed.result, 'printed', JSON.stringify(printed.error));
  assert.match(printed.stdout, /JsException/);
  assertNoHostDetail(printed);
  const uncaught = await run(`${PRELUDE}\nO.constructor('z')`);
  assert.equal(uncaught.error?.code, 'GUEST_EXCEPTION');
  assertNoHostDetail(uncaught);
});
