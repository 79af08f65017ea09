// Attack: a TypeScript stripper turned hostile (a bug in swc that a crafted source exploits) uses
// the wasm-bindgen imports to reach out of its wasm — `new Function`, the global object, calling a
// value, a getter or `constructor` read off an object, a `__proto__` write, or flooding the value
// table. Our glue (src/lanes/js/strip-glue.ts) links those as refusals and keeps the table to data.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GLUE_MODULE, MAX_LIVE_VALUES, StripGlue, StripGlueRefused } from '../../src/lanes/js/strip-glue.ts';

type Fn = (...args: unknown[]) => unknown;

function glue(): { fns: Record<string, Fn>; str: (s: string) => number } {
  const memory = new WebAssembly.Memory({ initial: 1 });
  const g = new StripGlue(memory);
  const fns = g.imports[GLUE_MODULE] as Record<string, Fn>;
  const str = (s: string): number => {
    const bytes = new TextEncoder().encode(s);
    new Uint8Array(memory.buffer).set(bytes, 0);
    return fns['__wbindgen_string_new']!(0, bytes.length) as number;
  };
  return { fns, str };
}
const named = (fns: Record<string, Fn>, prefix: string): Fn[] => Object.entries(fns).filter(([k]) => k.startsWith(prefix)).map(([, f]) => f);

test('new Function, the global object, calls, promises, microtasks and closures are refusals, not host reach', () => {
  const { fns, str } = glue();
  const refused = ['__wbg_newnoargs_', '__wbg_static_accessor_', '__wbg_call_', '__wbg_new_23a2665fac83c611', '__wbg_then_', '__wbg_resolve_', '__wbg_queueMicrotask_', '__wbindgen_closure_wrapper', '__wbindgen_memory', '__wbg_buffer_', '__wbg_next_'];
  for (const prefix of refused) {
    const fs = named(fns, prefix);
    assert.ok(fs.length > 0, prefix);
    for (const f of fs) assert.throws(() => f(str('return globalThis'), 0, 0), StripGlueRefused, prefix);
  }
});

test('property reads see own data only: no constructor, prototype or inherited method is handed out', () => {
  const { fns, str } = glue();
  const obj = fns['__wbg_new_405e22f390576ce2']!() as number;
  fns['__wbg_set_3f1d0b984ed272ed']!(obj, str('x'), fns['__wbindgen_number_new']!(5));
  const get = named(fns, '__wbg_get_67b2ba62fc30de12')[0]!;
  const getRef = named(fns, '__wbg_getwithrefkey_')[0]!;
  for (const key of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
    for (const read of [get, getRef]) {
      const h = read(obj, str(key)) as number;
      assert.equal(fns['__wbindgen_is_undefined']!(h), true, key);
      assert.equal(fns['__wbindgen_is_function']!(h), false, key);
    }
    assert.equal(fns['__wbindgen_in']!(str(key), obj), false, key);
  }
  const x = get(obj, str('x')) as number;
  assert.equal(fns['__wbindgen_is_falsy']!(x), false);
});

test('a __proto__ write defines an own property and never changes a prototype', () => {
  const { fns, str } = glue();
  const obj = fns['__wbg_new_405e22f390576ce2']!() as number;
  const arr = fns['__wbg_new_78feb108b6472713']!() as number;
  fns['__wbg_set_3f1d0b984ed272ed']!(obj, str('__proto__'), arr);
  const back = named(fns, '__wbg_getwithrefkey_')[0]!(obj, str('__proto__')) as number;
  assert.equal(fns['__wbg_isArray_a1eab7e0d067391b']!(back), true);
  assert.equal(fns['__wbindgen_in']!(str('length'), obj), false);
  // Writing through a key that is not a string or number (an object) is refused.
  assert.throws(() => fns['__wbg_set_3f1d0b984ed272ed']!(obj, fns['__wbg_new_405e22f390576ce2']!(), arr), StripGlueRefused);
});

test(`the value table holds at most ${MAX_LIVE_VALUES} live values`, () => {
  const { fns } = glue();
  assert.throws(() => {
    for (let i = 0; i <= MAX_LIVE_VALUES; i++) fns['__wbindgen_number_new']!(i);
  }, StripGlueRefused);
});
