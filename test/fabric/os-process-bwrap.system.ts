// `npm run test:system` (scripts/test-system.sh; needs `apt-get install bubblewrap` and a kernel
// that lets it create namespaces): the os_process tier inside bubblewrap. Not a *.test.ts file,
// so `npm test` (Node only) does not pick it up.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { bwrapStatus } from '../../src/engine/os-process/spawn.ts';
import { wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';
import { poolFull, waitGone } from '../helpers/os-pool.ts';

const engine = testEngine({ poolSize: 1 });

/** Every descendant of `pid` (by /proc's parent links). */
function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const [c, pp] of parent) if (pp === p) (out.push(c), walk(c));
  };
  walk(pid);
  return out;
}

test('bubblewrap is installed and can create namespaces here', () => {
  const s = bwrapStatus();
  assert.equal(s.reason, null, `bwrap unusable: ${s.reason}`);
});

test('strict isolation runs in bubblewrap: the same result as in process, no warning', async () => {
  const count = await wat('count');
  const here = await engine.run(count, { invoke: 'count', args: [500n] });
  const there = await engine.run(count, { tier: 'os_process', strictIsolation: true, invoke: 'count', args: [500n] });
  assert.equal(there.ok, true, JSON.stringify(there.error));
  assert.deepEqual(there.result, here.result);
  assert.deepEqual(there.warnings, []);
});

test('inside bubblewrap the child has its own network namespace, an empty environment, and is gone after the runaway is stopped', async () => {
  process.env['MEMBRANE_TEST_SECRET'] = 'canary-bwrap-44';
  let outer = 0;
  let seen: { net: string; environ: string; pid: number } | null = null;
  let poll: NodeJS.Timeout | undefined;
  const r = await engine.run(await wat('spin'), {
    tier: 'os_process',
    strictIsolation: true,
    invoke: 'run',
    timeoutMs: 2000,
    onChildSpawn: (pid) => {
      outer = pid;
      poll = setInterval(() => {
        for (const c of descendants(pid)) {
          try {
            if (!readFileSync(`/proc/${c}/cmdline`, 'latin1').includes('os-child')) continue;
            seen ??= { net: readlinkSync(`/proc/${c}/ns/net`), environ: readFileSync(`/proc/${c}/environ`, 'latin1'), pid: c };
          } catch {
            // not there yet, or gone
          }
        }
        if (seen) clearInterval(poll);
      }, 10);
    },
  });
  clearInterval(poll);
  assert.ok(['TIMEOUT', 'FUEL_EXHAUSTED'].includes(r.error?.code ?? ''), JSON.stringify(r.error)); // a runaway, stopped by one wall or the other
  assert.ok(seen, 'the sandboxed node process was not seen');
  const s = seen as { net: string; environ: string; pid: number };
  assert.notEqual(s.net, readlinkSync('/proc/self/ns/net'));
  assert.deepEqual(s.environ.split('\0').filter(Boolean).map((kv) => kv.slice(0, kv.indexOf('='))), ['MEMBRANE_HOME']);
  assert.equal(descendants(outer).length, 0);
  const alive = (): boolean => {
    try {
      return !/\) Z /.test(readFileSync(`/proc/${s.pid}/stat`, 'utf8'));
    } catch {
      return false;
    }
  };
  // SIGKILL went to the whole group when the call ended; the kernel finishes tearing it down (and the
  // namespace's init reaps it) asynchronously, so give it a moment.
  for (let i = 0; i < 100 && alive(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(alive(), false, 'the sandboxed node process outlived its call');
});

test('pooled children run inside bubblewrap too: a strict call takes one, a call without bwrap never does, close leaves none', async () => {
  const pooled = testEngine({ poolSize: 1, osProcessPool: 2 });
  const noop = await wat('noop');
  const argvOf = (pid: number): string[] => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  const strict = { tier: 'os_process', strictIsolation: true, invoke: 'noop' } as const;
  assert.equal((await pooled.run(noop, strict)).ok, true); // makes the pool of bwrap children
  const boxed = await poolFull(pooled, 2);
  assert.ok(boxed.every((p) => argvOf(p)[0]!.endsWith('bwrap')));
  let took = 0;
  const r = await pooled.run(noop, { ...strict, onChildSpawn: (p) => (took = p) });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.deepEqual(r.warnings, []);
  assert.ok(boxed.includes(took), 'the strict call did not take a pooled child');
  let plain: string[] = [];
  const p = await pooled.run(noop, { tier: 'os_process', bwrapPath: '', invoke: 'noop', onChildSpawn: (pid) => (plain = argvOf(pid)) });
  assert.equal(p.ok, true, JSON.stringify(p.error));
  assert.ok(!plain[0]!.endsWith('bwrap'));
  const waiting = await poolFull(pooled, 3);
  const inside = waiting.flatMap((w) => descendants(w));
  await pooled.close();
  assert.deepEqual(await waitGone([...waiting, ...inside]), []);
});

test('inside bubblewrap (no network of its own) a guest still fetches and uses kv: the parent serves its brokers', async () => {
  const { httpServer } = await import('../net/servers.ts');
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'membrane-bwrap-brokers-'));
  const server = await httpServer((_req, res) => res.end('served to the parent'));
  const net = testEngine({ poolSize: 1, brokers: { databaseFile: join(dir, 'engine.sqlite'), net: { allowCidrs: ['127.0.0.1/32'] } } });
  try {
    const code = `(async () => { const r = await fetch("http://127.0.0.1:${server.port}/"); kv.put("k", await r.text()); return kv.get("k"); })()`;
    const r = await net.exec({ language: 'js', code, profile: 'network', caps: ['net', 'kv'], tier: 'os_process', strictIsolation: true });
    assert.equal(r.ok, true, JSON.stringify(r.error));
    assert.equal(r.result, 'served to the parent');
    assert.deepEqual(r.warnings, []);
    assert.equal(server.requests.length, 1);
  } finally {
    await net.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('inside bubblewrap the spawning caps run in the child: built-ins, a registered command and a big one read from the shelf; nothing is left', async () => {
  const { CommandRegistry } = await import('../../src/index.ts');
  const registry = CommandRegistry.withBuiltins();
  const nest = new Uint8Array(readFileSync(new URL('../fixtures/c/nest.wasm', import.meta.url)));
  registry.register('nest', nest);
  const echo = new Uint8Array(readFileSync(new URL('../../commands/bin/echo.wasm', import.meta.url)));
  // echo with a 300 KiB custom section: past the inline bound, it goes by content hash.
  const size = 4 + 300 * 1024; // the name (its length and "pad") and the padding
  const leb = [(size & 0x7f) | 0x80, ((size >> 7) & 0x7f) | 0x80, size >> 14];
  registry.register('bigecho', new Uint8Array([...echo, 0, ...leb, 3, 0x70, 0x61, 0x64, ...new Uint8Array(size - 4)]));
  const spawner = testEngine({ commands: registry, poolSize: 1 });
  const kids: number[] = [];
  for (const [argv, want] of [
    [['run', 'echo', 'hi'], 'hi\nstatus=0 error=\n'],
    [['run', 'bigecho', 'big'], 'big\nstatus=0 error=\n'],
    [['spawn', '3', 'echo', 'x'], 'spawned 3 refused 0 code 0\nwaited ok 3\n'],
  ] as const) {
    const here = await spawner.run(nest, { profile: 'minimal', argv: [...argv] });
    const there = await spawner.run(nest, { profile: 'minimal', argv: [...argv], tier: 'os_process', strictIsolation: true, onChildSpawn: (p) => void kids.push(p) });
    assert.equal(there.ok, true, JSON.stringify(there.error));
    assert.deepEqual([there.stdout, here.stdout, there.warnings], [want, want, []]);
  }
  assert.deepEqual(await waitGone(kids), []);
  assert.deepEqual(descendants(process.pid).filter((p) => kids.includes(p)), []);
});
