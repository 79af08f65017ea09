// Attack: a core guest names a command by path, hoping the path reaches past its VFS — the host's
// /etc/passwd, the Node binary, a registered tool under another name — or hands over a module so
// big it chokes the host, or one that asks for more memory than the caller has. A path resolves
// only inside the caller's own VFS; what it names is prepared under the caller's limits.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { CommandRegistry, createEngine, type Engine } from '../../src/index.ts';
import { GUEST_ERR, MAX_VFS_MODULE_BYTES } from '../../src/abi/command.ts';
import { O_CREAT, Vfs, resolveVfs } from '../../src/storage/index.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

const fixture = (n: string) => new Uint8Array(readFileSync(new URL(`../fixtures/c/${n}.wasm`, import.meta.url)));
const nest = fixture('nest');
const VFS = 'cmd-path-escape';
let engine: Engine;

before(() => {
  process.env['MEMBRANE_HOME'] = tempDir('membrane-cmd-path-');
  const registry = CommandRegistry.withBuiltins();
  registry.register('nest', nest);
  engine = createEngine({ commands: registry, poolSize: 1 });
  const vfs = Vfs.open({ file: resolveVfs({ name: VFS }).file });
  try {
    const put = (path: string, data: Uint8Array): void => {
      vfs.write(vfs.open('workspace', path, O_CREAT).ino, 0, data);
    };
    // A valid module header followed by padding: over the cap by one byte.
    const big = new Uint8Array(MAX_VFS_MODULE_BYTES + 1);
    big.set([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]);
    put('/big.wasm', big);
    put('/membomb.wasm', fixture('membomb'));
    put('/nest.wasm', nest);
  } finally {
    vfs.close();
  }
});
after(() => engine.close());

const run = (...argv: string[]) => engine.run(nest, { profile: 'minimal', vfs: VFS, argv });

test('host paths, climbs out of the volume, and a registered tool\'s name as a path name nothing', async () => {
  for (const path of ['/etc/passwd', '../../../../../../etc/passwd', '/proc/self/exe', process.execPath, './../../bin/echo', '/echo', 'file:///etc/passwd']) {
    const r = await run('run', path);
    assert.equal(r.stdout, `error ${GUEST_ERR.NOT_FOUND}\n`, path);
  }
});

test('a module over MAX_VFS_MODULE_BYTES is TOO_LARGE before anything is read into the host or compiled', async () => {
  const t0 = performance.now();
  const r = await run('run', './big.wasm');
  assert.equal(r.stdout, `error ${GUEST_ERR.TOO_LARGE}\n`);
  assert.ok(performance.now() - t0 < LOAD_SLACK_MS, 'refused at once');
});

test('a memory bomb from the VFS is held to the caller\'s memory cap, and its caller goes on', async () => {
  const r = await run('run', './membomb.wasm');
  assert.equal(r.ok, true, r.error?.message);
  assert.match(r.stdout, /status=-1 error=MEMORY_LIMIT\n$/);
});

test('a module that runs itself by path again and again stops at the nesting depth (8): QUOTA, the chain unwinds', async () => {
  const argv: string[] = [];
  for (let i = 0; i < 12; i++) argv.push('exec', './nest.wasm');
  const r = await run(...argv, 'exec', 'echo', 'bottom');
  // Depth 1..8 ran; the exec that would be depth 9 is refused, and each level reports its child.
  assert.equal(r.stdout, `error ${GUEST_ERR.QUOTA}\nstatus=1 error=\n${'status=0 error=\n'.repeat(7)}`);
  assert.ok(!r.stdout.includes('bottom'));
});
