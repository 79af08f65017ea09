// A library script that never calls engine.close() exits on its own once its calls are done: idle
// guest workers, JS lane workers and pooled Python children do not keep the event loop alive;
// a call in flight does (the script gets its result before the process ends).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runNode, type Ran } from '../helpers/cli.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Generous for a loaded 2-core box: an idle engine that is still alive after this never exits. */
const EXIT_BOUND_MS = 30_000;

const runScript = (source: string, limitMs: number): Promise<Ran> => runNode(['--import', 'tsx', '--input-type=module', '-e', source], { cwd: ROOT, limitMs });

const PRELUDE = `
import { createEngine } from './src/index.ts';
import { wat } from './test/helpers/wat.ts';
const engine = createEngine();
const print = (label, r) => console.log(label, JSON.stringify({ ok: r.ok, result: r.result, code: r.error?.code }));
`;

test('a script that runs a wasm call, a JS snippet and a persistent instance and never closes anything exits 0 on its own', async () => {
  const r = await runScript(
    `${PRELUDE}
print('run', await engine.run(await wat('noop'), { invoke: 'add', args: [40, 2] }));
print('js', await engine.exec({ language: 'js', code: '6 * 7' }));
const kept = await engine.start('kept', await wat('noop'), {});
print('instance', await kept.call('add', [2, 40]));
const t = performance.now();
process.on('exit', () => console.log('idle-ms', Math.round(performance.now() - t)));`,
    EXIT_BOUND_MS + 30_000,
  );
  assert.ok(!r.killed, `the process was still alive after ${Math.round(r.ms)} ms: idle workers keep it alive\n${r.stdout}${r.stderr}`);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^run \{"ok":true,"result":42\}$/m);
  assert.match(r.stdout, /^js \{"ok":true,"result":42\}$/m);
  assert.match(r.stdout, /^instance \{"ok":true,"result":42\}$/m);
  const idle = Number(/idle-ms (\d+)/.exec(r.stdout)?.[1]);
  assert.ok(idle < EXIT_BOUND_MS, `exited ${idle} ms after its last call`);
});

test('a call in flight keeps the process alive: spinning guests are awaited to their TIMEOUT', async () => {
  const r = await runScript(
    `${PRELUDE}
print('wasm', await engine.run(await wat('spin'), { invoke: 'run', profile: 'network', timeoutMs: 1500 }));
print('js', await engine.exec({ language: 'js', code: 'for(;;){}', timeoutMs: 1500 }));`,
    EXIT_BOUND_MS + 30_000,
  );
  assert.ok(!r.killed, `the process did not exit\n${r.stdout}${r.stderr}`);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^wasm \{"ok":false,"code":"TIMEOUT"\}$/m);
  assert.match(r.stdout, /^js \{"ok":false,"code":"TIMEOUT"\}$/m);
});

test('a Python snippet: the pooled interpreters left booted do not keep the process alive', async () => {
  const r = await runScript(
    `${PRELUDE}
print('py', await engine.exec({ language: 'python', code: '6 * 7', timeoutMs: 60000 }));
const t = performance.now();
process.on('exit', () => console.log('idle-ms', Math.round(performance.now() - t)));`,
    EXIT_BOUND_MS + 90_000,
  );
  assert.ok(!r.killed, `the process was still alive after ${Math.round(r.ms)} ms\n${r.stdout}${r.stderr}`);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^py \{"ok":true,"result":42\}$/m);
  const idle = Number(/idle-ms (\d+)/.exec(r.stdout)?.[1]);
  assert.ok(idle < EXIT_BOUND_MS, `exited ${idle} ms after its last call`);
});
