import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

// The permission-model path on every machine: `bwrapPath: ''` hides bubblewrap (the bwrap path is
// checked by `npm run test:system`, test/fabric/os-process-bwrap.system.ts).
const NO_BWRAP = { tier: 'os_process', bwrapPath: '' } as const;
const engine = testEngine({ poolSize: 1 });
const CANARY = 'membrane-canary-7f3a';
process.env['MEMBRANE_TEST_SECRET'] = CANARY;

const gone = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
};

test('a module run on os_process matches the same run in process (result, stdout bytes, fuel)', async () => {
  const count = await wat('count');
  const here = await engine.run(count, { invoke: 'count', args: [1000n] });
  const there = await engine.run(count, { ...NO_BWRAP, invoke: 'count', args: [1000n] });
  assert.equal(there.ok, true, JSON.stringify(there.error));
  assert.deepEqual(there.result, here.result);
  assert.equal(there.fuelUsed, here.fuelUsed);
  assert.match(there.warnings.join('\n'), /bwrap not installed; the child ran under the Node permission model alone/);
  const wc = engine.commands.get('wc')!;
  const args = { argv: engine.commands.argsFor('wc', ['-c']), argv0: 'wc', stdin: new TextEncoder().encode('hello os_process'), captureBytes: true };
  const a = await engine.run(wc, args);
  const b = await engine.run(wc, { ...NO_BWRAP, ...args });
  assert.equal(b.ok, true, JSON.stringify(b.error));
  assert.equal(b.stdout, a.stdout);
  assert.deepEqual(b.stdoutBytes, a.stdoutBytes);
  assert.equal(b.exitCode, a.exitCode);
});

test('a JS exec on os_process matches the same exec in process', async () => {
  const code = 'let s = 0; for (let i = 0; i < 100; i++) s += i; console.log("sum", s); ({ s, ctx: context })';
  const here = await engine.exec({ language: 'js', code, context: { a: 1 } });
  const there = await engine.exec({ language: 'js', code, context: { a: 1 }, ...NO_BWRAP });
  assert.equal(there.ok, true, JSON.stringify(there.error));
  assert.deepEqual(there.result, here.result);
  assert.equal(there.stdout, here.stdout);
  const thrown = await engine.exec({ language: 'js', code: 'throw new TypeError("nope")', ...NO_BWRAP });
  assert.equal(thrown.ok, false);
  assert.equal(thrown.error?.code, 'GUEST_EXCEPTION');
});

test('TypeScript and Python execs on os_process match the same execs in process', async () => {
  const ts = 'const n: number = 6; console.log(n * 7); n';
  const tsHere = await engine.exec({ language: 'ts', code: ts });
  const tsThere = await engine.exec({ language: 'ts', code: ts, ...NO_BWRAP });
  assert.equal(tsThere.ok, true, JSON.stringify(tsThere.error));
  assert.deepEqual([tsThere.result, tsThere.stdout], [tsHere.result, tsHere.stdout]);
  const py = 'import json\nprint(json.dumps({"a": [1, 2]}))';
  const pyHere = await engine.exec({ language: 'python', code: py });
  const pyThere = await engine.exec({ language: 'python', code: py, ...NO_BWRAP });
  assert.equal(pyThere.ok, true, JSON.stringify(pyThere.error));
  assert.equal(pyThere.stdout, pyHere.stdout);
  assert.equal(pyThere.stdout, '{"a": [1, 2]}\n');
  // Granted nothing: the interpreter's own in-memory files still work (it was INTERNAL before).
  const bare = await engine.exec({ language: 'python', code: py, caps: [], ...NO_BWRAP });
  assert.equal(bare.ok, true, JSON.stringify(bare.error));
  assert.equal(bare.stdout, '{"a": [1, 2]}\n');
});

test("the child's environment holds none of the parent's variables (a canary is absent)", async () => {
  let pid = 0;
  let environ = '';
  const spin = await wat('spin');
  const r = await engine.run(spin, {
    ...NO_BWRAP,
    invoke: 'run',
    timeoutMs: 1500,
    onChildSpawn: (p) => {
      pid = p;
      // Read while the child lives (its boot alone outlasts this turn of the event loop).
      environ = readFileSync(`/proc/${p}/environ`, 'latin1');
    },
  });
  assert.ok(['TIMEOUT', 'FUEL_EXHAUSTED'].includes(r.error?.code ?? ''), JSON.stringify(r.error)); // a runaway, stopped by one wall or the other
  assert.ok(pid > 0);
  const vars = environ.split('\0').filter(Boolean).map((kv) => kv.slice(0, kv.indexOf('=')));
  assert.ok(!environ.includes(CANARY), 'the canary reached the child');
  assert.deepEqual(vars, ['MEMBRANE_HOME']);
});

test('a spinning guest on os_process is TIMEOUT and its child process is gone', async () => {
  let pid = 0;
  const t0 = performance.now();
  const r = await engine.exec({ language: 'js', code: 'for (;;) {}', timeoutMs: 400, ...NO_BWRAP, onChildSpawn: (p) => (pid = p) });
  assert.equal(r.ok, false);
  assert.equal(r.error?.code, 'TIMEOUT');
  assert.ok(performance.now() - t0 < 15_000);
  assert.ok(pid > 0 && gone(pid), `child ${pid} is still there`);
});

test('strict isolation without bubblewrap is TIER_UNAVAILABLE "bwrap not installed": nothing runs', async () => {
  let spawned = false;
  const r = await engine.run(await wat('noop'), { ...NO_BWRAP, strictIsolation: true, invoke: 'noop', onChildSpawn: () => (spawned = true) });
  assert.equal(r.error?.code, 'TIER_UNAVAILABLE');
  assert.equal(r.error?.details['reason'], 'bwrap not installed');
  const x = await engine.exec({ language: 'js', code: '1', ...NO_BWRAP, strictIsolation: true, onChildSpawn: () => (spawned = true) });
  assert.equal(x.error?.code, 'TIER_UNAVAILABLE');
  assert.match(x.error?.message ?? '', /bwrap not installed/);
  assert.equal(spawned, false);
});

test('spawning powers run inside the child; brokered ones are served; what the tier cannot do is NOT_CAPABLE', async () => {
  // Named in caps or granted by the profile: commands and exec are there, next to kv, queue, secrets…
  const r = await engine.exec({ language: 'js', code: "[commands.run('echo', ['in', 'child']).stdout, typeof exec, typeof kv]", profile: 'minimal', caps: ['kv', 'exec', 'commands'], ...NO_BWRAP });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.deepEqual(r.result, ['in child\n', 'object', 'object']);
  const p = await engine.exec({ language: 'js', code: '[typeof commands, typeof exec, typeof kv, typeof queue, typeof secrets]', profile: 'minimal', ...NO_BWRAP });
  assert.equal(p.ok, true, JSON.stringify(p.error));
  assert.deepEqual(p.result, ['object', 'object', 'object', 'object', 'object']);
  assert.doesNotMatch(p.warnings.join('\n'), /ran without/);
  const m = await engine.run(await wat('noop'), { invoke: 'noop', mounts: ['/tmp'], ...NO_BWRAP });
  assert.equal(m.error?.code, 'NOT_CAPABLE');
});

test('fan-out with tier os_process: one child per input, results in order', async () => {
  const out = await engine.fanout({ command: 'wc', args: ['-c'], inputs: ['a', 'bbb', 'cc'], width: 2, tier: 'os_process' });
  assert.deepEqual(out.map((x) => (x.ok ? new TextDecoder().decode(x.output).trim() : x.error.code)), ['1', '3', '2']);
});

test('a profile fallback on os_process is warned and audited in the parent, marked tier os_process', async () => {
  const records: { kind: string; detail: Record<string, unknown> }[] = [];
  const audited = testEngine({ poolSize: 1, brokers: { audit: () => ({ append: (e) => void records.push(e) }) } });
  const r = await audited.exec({ language: 'js', code: '1', profile: 'no-such-profile', ...NO_BWRAP });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.profile, 'compute');
  assert.match(r.warnings.join('\n'), /no-such-profile/);
  const fallback = records.find((x) => x.kind === 'profile-fallback');
  assert.equal(fallback?.detail['tier'], 'os_process');
  assert.equal(fallback?.detail['requested'], 'no-such-profile');
});
