/**
 * The tour's second act: model-written source through `engine.exec` — JavaScript and TypeScript in
 * fuel-metered QuickJS, Python in CPython on WASI, C compiled by clang running
 * as a guest — each snippet fresh, hostile ones side by side with useful ones, all at once.
 */

import type { Engine, ExecOutcome } from '../src/index.ts';
import { printTable } from './table.ts';

interface Snippet {
  readonly language: 'js' | 'ts' | 'python' | 'c';
  readonly tried: string;
  readonly code: string;
  readonly options?: { profile?: string; timeoutMs?: number; fuel?: number; memoryBytes?: number };
}

const SNIPPETS: readonly Snippet[] = [
  { language: 'ts', tried: 'const n: number = 6; n * 7 (types stripped inside)', code: 'const n: number = 6; n * 7' },
  { language: 'js', tried: 'await at top level', code: 'const v = await Promise.resolve(6); v * 7' },
  { language: 'js', tried: "throw new TypeError('bad') on line 2", code: "const x = 1;\nthrow new TypeError('bad');" },
  { language: 'js', tried: 'for(;;){} (budget 1000 ms)', code: 'for(;;){}', options: { timeoutMs: 1000 } },
  { language: 'js', tried: 'allocate 1 MiB buffers forever (32 MiB)', code: 'const keep = []; for (;;) keep.push(new Uint8Array(1 << 20))', options: { memoryBytes: 32 << 20 } },
  { language: 'js', tried: 'look for process, require, kv under compute', code: "typeof process + ' ' + typeof require + ' ' + typeof kv" },
  { language: 'js', tried: "constructor chain to 'return process'", code: "(() => { try { return this.constructor.constructor('return process')() } catch (e) { return String(e) } })()" },
  { language: 'js', tried: 'fetch the cloud metadata service (network)', code: "fetch('http://169.254.169.254/latest/meta-data/').then((r) => r.status, (e) => e.code)", options: { profile: 'network' } },
  { language: 'python', tried: 'await asyncio.sleep(0) at top level', code: 'import asyncio\nawait asyncio.sleep(0)\n6 * 7' },
  { language: 'python', tried: "os.system('id')", code: "import os\nos.system('id')" },
  { language: 'python', tried: 'import js (the host JS world)', code: 'import js' },
  { language: 'python', tried: "open('/etc/passwd')", code: "open('/etc/passwd').read()" },
  { language: 'python', tried: 'while True: pass on 1e7 fuel', code: 'while True: pass', options: { fuel: 1e7 } },
  { language: 'c', tried: 'printf (clang and wasm-ld run as guests too)', code: '#include <stdio.h>\nint main(void) { printf("%d\\n", 6 * 7); return 0; }' },
  { language: 'c', tried: '#include "/etc/passwd" at compile time', code: '#include "/etc/passwd"\nint main(void) { return 0; }' },
  { language: 'python', tried: 'membrane.kv put + get (minimal)', code: "import membrane\nmembrane.kv.put('greeting', 'hi')\nmembrane.kv.get('greeting')", options: { profile: 'minimal' } },
];

function ended(r: ExecOutcome): string {
  if (r.ok && r.stdout !== '' && r.result === 0) return `stdout ${JSON.stringify(r.stdout.trim())}, exit 0`.slice(0, 70);
  if (r.ok) return `result ${JSON.stringify(r.result)}`.slice(0, 70);
  const d = r.error!.details as { name?: string; stack?: { file: string; line: number; column: number }[] } | undefined;
  if (r.error!.code === 'GUEST_EXCEPTION' && d?.stack?.[0]) return `GUEST_EXCEPTION ${d.name}: ${r.error!.message} at ${d.stack[0].file}:${d.stack[0].line}:${d.stack[0].column}`.slice(0, 70);
  return `${r.error!.code}: ${r.error!.message}`.slice(0, 70);
}

/** Run every snippet at once; print one row each. */
export async function snippetTour(engine: Engine): Promise<void> {
  const t0 = performance.now();
  const results = await Promise.all(SNIPPETS.map((s) => engine.exec({ language: s.language, code: s.code, ...s.options })));
  const rows = SNIPPETS.map((s, i) => [s.language, s.tried, ended(results[i]!), `${results[i]!.durationMs.toFixed(1)} ms`]);
  printTable('Untrusted source through engine.exec: a fresh interpreter per snippet, all at once', ['lane', 'what the snippet tried', 'how it ended', 'took'], rows);
  const py = results.filter((_, i) => SNIPPETS[i]!.language === 'python');
  console.log(
    `\n${SNIPPETS.length} snippets in ${((performance.now() - t0) / 1000).toFixed(1)} s, including the lanes' start ` +
      `(a Python pool miss boots an interpreter, ~0.3 s; warm-pool hits: ${py.filter((r) => r.poolHit).length}/${py.length}).`,
  );
}
