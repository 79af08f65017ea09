// Attack: make reading an uncaught Python exception hang, crash or flood the host. The lane's
// report (issue #15) calls the exception's `__str__` and walks its traceback and chain. A hostile
// snippet raises exceptions whose `__str__` raises or never returns, whose message is 8 MiB,
// whose class overrides `__traceback__`, `__cause__` and `__module__` with properties, whose
// `__context__` chain is a cycle or 500 long, and BaseException subclasses, KeyboardInterrupt and
// SystemExit. Every call still ends with a bounded report (message ≤ 4 KiB, name ≤ 128,
// ≤ 32 frames, traceback ≤ 16 KiB) or its deadline, and the engine answers the next call.
//
// Decided mappings: any uncaught BaseException, KeyboardInterrupt and GeneratorExit included, is
// GUEST_EXCEPTION; SystemExit stays GUEST_TRAP with its line (as before issue #15); MemoryError
// stays MEMORY_LIMIT.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-py-hostile-exc-');
// compute's own 5 s would clamp the calls' 10 s budgets: a loaded machine's pool miss (a boot) needs the room.
const engine = testEngine({ poolSize: 1, operatorLimits: { compute: { timeoutMs: 30_000 } } });

type Details = { name: string; message: string; stack: { file: string; line: number }[]; traceback: string };
const run = (code: string, timeoutMs = 10_000) => engine.exec({ language: 'python', code, timeoutMs });

function bounded(d: Details): void {
  assert.ok(d.name.length <= 128, `name ${d.name.length}`);
  assert.ok(Buffer.byteLength(d.message) <= 4096, `message ${Buffer.byteLength(d.message)}`);
  assert.ok(d.stack.length <= 32, `frames ${d.stack.length}`);
  assert.ok(d.traceback.length <= 16 * 1024, `traceback ${d.traceback.length}`);
}

test("__str__ that raises, a __traceback__/__cause__/__module__ property and a 1 000-character name: a bounded report, no guest hook consulted", async () => {
  const r = await run(`import sys
class Meta(type):
    pass
class Evil(Exception, metaclass=Meta):
    __module__ = property(lambda self: print('consulted module') or 'x')
    def __str__(self):
        raise RuntimeError('no str for you')
    @property
    def __traceback__(self):
        print('consulted tb'); return None
    @property
    def __cause__(self):
        print('consulted cause'); return None
Evil.__qualname__ = 'E' * 1000
def f():
    raise Evil()
f()`);
  assert.equal(r.error?.code, 'GUEST_EXCEPTION', JSON.stringify(r.error));
  const d = r.error?.details as Details;
  bounded(d);
  assert.equal(d.message, '<exception str() failed>');
  assert.equal(d.name, 'E'.repeat(128));
  assert.deepEqual(d.stack.map((f) => f.line), [16, 17]);
  assert.doesNotMatch(r.stdout, /consulted/);
});

test('a __str__ that never returns ends at the deadline (TIMEOUT), not never', async () => {
  const t0 = performance.now();
  const r = await run('class Slow(Exception):\n    def __str__(self):\n        while True: pass\nraise Slow()', 1000);
  const ms = performance.now() - t0;
  assert.equal(r.error?.code, 'TIMEOUT', JSON.stringify(r.error));
  assert.ok(ms < 1000 + LOAD_SLACK_MS, `ended after ${ms.toFixed(0)} ms`);
});

test('an 8 MiB message, a 500-long chain of causes and a cycle in __context__: cut to the bounds', async () => {
  const huge = await run("raise ValueError('é' * (4 << 20))");
  const h = huge.error?.details as Details;
  assert.equal(huge.error?.code, 'GUEST_EXCEPTION');
  bounded(h);
  assert.ok(Buffer.byteLength(huge.error!.message) <= 4096);
  assert.match(h.message, /^é+$/);
  const chain = await run(`e = None
for i in range(500):
    try:
        raise KeyError(i) from e
    except KeyError as k:
        e = k
a, b = ValueError('a'), ValueError('b')
a.__context__ = b
b.__context__ = a
try:
    raise a
except ValueError as x:
    raise x from e`);
  const c = chain.error?.details as Details;
  assert.equal(chain.error?.code, 'GUEST_EXCEPTION', JSON.stringify(chain.error).slice(0, 500));
  bounded(c);
  assert.equal(c.name, 'ValueError');
  assert.ok((c.traceback.match(/The above exception was the direct cause/g) ?? []).length <= 8);
  const cycle = await run("a, b = TypeError('a'), TypeError('b')\na.__context__ = b\nb.__context__ = a\nraise a");
  const y = cycle.error?.details as Details;
  assert.equal(cycle.error?.code, 'GUEST_EXCEPTION');
  bounded(y);
  assert.ok((y.traceback.match(/During handling/g) ?? []).length <= 8);
});

test('BaseException subclasses and KeyboardInterrupt are GUEST_EXCEPTION; SystemExit stays GUEST_TRAP; the engine answers the next call', async () => {
  const base = await run('class Out(BaseException): pass\nraise Out("bye")');
  assert.equal(base.error?.code, 'GUEST_EXCEPTION');
  assert.equal((base.error?.details as Details).name, 'Out');
  const kb = await run('raise KeyboardInterrupt');
  assert.equal(kb.error?.code, 'GUEST_EXCEPTION', JSON.stringify(kb));
  assert.equal(kb.error?.message, 'KeyboardInterrupt');
  const exit = await run('import sys\nsys.exit(3)');
  assert.deepEqual(exit.error, { code: 'GUEST_TRAP', message: 'SystemExit: 3' });
  assert.equal((await run('6*7')).result, 42);
});
