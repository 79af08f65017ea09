// Extism JS SDK baselines, run in a plain Node process (Extism's worker is a data: URL that a
// TypeScript loader inherited through --import cannot load). Prints one JSON line:
// { mode, p50, p99 } in milliseconds. Modes: worker-call, create-call-close.
import createPlugin from '@extism/extism';
import initWabt from 'wabt';

const [mode, n = '3000'] = process.argv.slice(2);
const N = Number(n);
const wabt = await initWabt();
const wat = (s) => {
  const m = wabt.parseWat('x.wat', s, {});
  const b = new Uint8Array(m.toBinary({}).buffer);
  m.destroy();
  return b;
};
const NOOP = '(module (memory (export "memory") 1) (func (export "noop") (result i32) i32.const 0))';
const SMALL_WASI = process.env.SMALL_WASI ?? NOOP;

async function sample(count, warm, op) {
  for (let i = 0; i < warm; i++) await op();
  const out = [];
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await op();
    out.push(performance.now() - t);
  }
  out.sort((a, b) => a - b);
  return { p50: out[Math.floor(out.length * 0.5)], p99: out[Math.floor(out.length * 0.99)] };
}

let r;
if (mode === 'worker-call') {
  const p = await createPlugin({ wasm: [{ data: wat(NOOP) }] }, { useWasi: false, runInWorker: true });
  r = await sample(N, Math.floor(N / 5), () => p.call('noop'));
  await p.close();
} else if (mode === 'create-call-close') {
  const bytes = wat(SMALL_WASI);
  r = await sample(N, Math.floor(N / 10), async () => {
    const p = await createPlugin({ wasm: [{ data: bytes }] }, { useWasi: true });
    await p.call('noop');
    await p.close();
  });
} else {
  throw new Error(`unknown mode ${mode}`);
}
process.stdout.write(`${JSON.stringify({ mode, ...r })}\n`);
