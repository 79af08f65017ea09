// wasm/memory-import.ts: a module's one defined memory becomes the import the worker fills with
// a recycled, zeroed memory — and nothing else about the module changes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { POOL_MEMORY_IMPORT, applyLimits, importMemory } from '../../src/wasm/index.ts';
import { SandboxError } from '../../src/errors.ts';
import { watText } from '../helpers/wat.ts';

const capped = async (src: string): Promise<Uint8Array> => applyLimits(await watText(src), { maxMemoryPages: 16, maxTableElements: 100, trapOnGrowFailure: false }).bytes;

test('a defined memory becomes membrane:pool.memory with the capped limits; data, exports and functions keep their meaning', async () => {
  const bytes = await capped(`(module
    (import "env" "f" (func $f (param i32) (result i32)))
    (memory (export "memory") 2)
    (data (i32.const 8) "abc")
    (func (export "run") (result i32) (call $f (i32.load8_u (i32.const 9)))))`);
  const r = importMemory(bytes);
  assert.deepEqual(r.memory, { initialPages: 2, maxPages: 16 });
  const mod = new WebAssembly.Module(r.bytes as Uint8Array<ArrayBuffer>);
  const imports = WebAssembly.Module.imports(mod);
  assert.deepEqual(imports.map((i) => `${i.module}.${i.name}:${i.kind}`), ['env.f:function', `${POOL_MEMORY_IMPORT.module}.${POOL_MEMORY_IMPORT.name}:memory`]);
  const memory = new WebAssembly.Memory({ initial: 2, maximum: 16 });
  const inst = new WebAssembly.Instance(mod, { env: { f: (x: number) => x + 1 }, [POOL_MEMORY_IMPORT.module]: { [POOL_MEMORY_IMPORT.name]: memory } });
  assert.equal(inst.exports['memory'], memory, 'the export is the memory the host passed');
  assert.equal((inst.exports['run'] as () => number)(), 'b'.charCodeAt(0) + 1);
  assert.throws(() => new WebAssembly.Instance(mod, { env: { f: () => 0 }, [POOL_MEMORY_IMPORT.module]: { [POOL_MEMORY_IMPORT.name]: new WebAssembly.Memory({ initial: 2, maximum: 17 }) } }), 'a memory with a larger maximum does not link');
});

test('modules it leaves alone: no memory, an imported memory, a shared memory', async () => {
  for (const src of [
    '(module (func (export "f")))',
    '(module (import "env" "memory" (memory 1 4)))',
    '(module (memory 1 4 shared))',
  ]) {
    const bytes = await capped(src);
    const r = importMemory(bytes);
    assert.equal(r.memory, null, src);
    assert.equal(r.bytes, bytes, src);
  }
});

test('a module that imports membrane:pool itself is INVALID_MODULE', async () => {
  const bytes = await capped('(module (import "membrane:pool" "memory" (memory 1 4)))');
  assert.throws(() => importMemory(bytes), (e: unknown) => e instanceof SandboxError && e.code === 'INVALID_MODULE');
});
