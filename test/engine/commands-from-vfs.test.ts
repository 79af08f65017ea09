// A core guest runs a module from its own VFS by path (`./hello.wasm`, `/bin/tool.wasm`) through
// run_command, exec and process_spawn (test/fixtures/c/nest.c): the bytes come from the caller's
// VFS, the main thread prepares and links them with the caller's caps — never more — and the run
// is billed like a registered command's. Paths never reach the registry or the host filesystem.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { CommandRegistry, createEngine, type Engine } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { O_CREAT, Vfs, resolveVfs } from '../../src/storage/index.ts';
import { watText } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

const fixture = (n: string) => new Uint8Array(readFileSync(new URL(`../fixtures/c/${n}.wasm`, import.meta.url)));
const nest = fixture('nest');
const VFS = 'cmds-from-vfs';
let engine: Engine;

/** Put files into the named VFS's workspace volume (the guest's `/`). */
function seed(files: Record<string, Uint8Array | string>): void {
  const vfs = Vfs.open({ file: resolveVfs({ name: VFS }).file });
  try {
    for (const [path, data] of Object.entries(files)) {
      for (let i = path.indexOf('/', 1); i > 0; i = path.indexOf('/', i + 1)) {
        try {
          vfs.mkdir('workspace', path.slice(0, i));
        } catch {
          // already there
        }
      }
      const st = vfs.open('workspace', path, O_CREAT);
      vfs.write(st.ino, 0, typeof data === 'string' ? new TextEncoder().encode(data) : data);
    }
  } finally {
    vfs.close();
  }
}

before(async () => {
  process.env['MEMBRANE_HOME'] = tempDir('membrane-cmds-vfs-');
  const registry = CommandRegistry.withBuiltins();
  registry.register('nest', nest);
  engine = createEngine({ commands: registry, poolSize: 1 });
  // A command that needs the net cap (not in `minimal`): linking it for a minimal caller is refused.
  const needsNet = await watText(`(module
    (import "membrane" "http_fetch" (func (param i32 i32 i32 i32) (result i32)))
    (memory (export "memory") 1)
    (func (export "_start")))`);
  seed({ '/hello.wasm': fixture('hello'), '/bin/upper.wasm': fixture('upper'), '/notwasm.wasm': 'just text', '/needs-net.wasm': needsNet });
});
after(() => engine.close());

const run = (...argv: string[]) => engine.run(nest, { profile: 'minimal', vfs: VFS, argv });

test('run_command and exec run a module named by a relative or absolute VFS path, with argv and stdin', async () => {
  const rel = await run('run', './hello.wasm', 'one', 'two');
  assert.equal(rel.ok, true, rel.error?.message);
  assert.equal(rel.stdout, 'hello from a wasm guest\narg 1: one\narg 2: two\nstatus=0 error=\n');
  const abs = await run('exec', '/bin/upper.wasm');
  assert.equal(abs.stdout, 'HELLO\nstatus=0 error=\n');
  const bare = await run('run', 'bin/upper.wasm');
  assert.equal(bare.stdout, 'HELLO\nstatus=0 error=\n');
});

test('exec of a VFS path appends its line to _steps.jsonl with the path as argv[0]', async () => {
  await run('exec', './hello.wasm', 'x');
  const vfs = Vfs.open({ file: resolveVfs({ name: VFS }).file });
  try {
    const st = vfs.stat('workspace', '_steps.jsonl');
    const last = JSON.parse(new TextDecoder().decode(vfs.read(st.ino, 0, st.size)).trim().split('\n').at(-1)!);
    assert.deepEqual(last.argv, ['./hello.wasm', 'x']);
    assert.equal(last.status, 0);
    assert.ok(last.fuelUsed > 0);
  } finally {
    vfs.close();
  }
});

test('a missing path is NOT_FOUND, a directory or a file that is not wasm is INVALID; nothing runs', async () => {
  assert.equal((await run('run', './nosuch.wasm')).stdout, `error ${GUEST_ERR.NOT_FOUND}\n`);
  assert.equal((await run('run', '/bin')).stdout, `error ${GUEST_ERR.INVALID}\n`);
  assert.equal((await run('run', './notwasm.wasm')).stdout, `error ${GUEST_ERR.INVALID}\n`);
});

test('a VFS module that imports a power its caller was not granted is DENIED: it links with the caller\'s caps only', async () => {
  assert.equal((await run('run', './needs-net.wasm')).stdout, `error ${GUEST_ERR.DENIED}\n`);
});

test('without a VFS a path names nothing: NOT_FOUND, never a registered command or a host file', async () => {
  const r = await engine.run(nest, { profile: 'minimal', argv: ['run', './hello.wasm'] });
  assert.equal(r.stdout, `error ${GUEST_ERR.NOT_FOUND}\n`);
  // "echo" is registered; "/echo" is a path, looked up only in the VFS.
  assert.equal((await run('run', '/echo')).stdout, `error ${GUEST_ERR.NOT_FOUND}\n`);
});

test('process_spawn runs a VFS module on another worker and process_wait collects it', async () => {
  const r = await run('spawn', '2', './hello.wasm');
  assert.equal(r.ok, true, r.error?.message);
  assert.equal(r.stdout, 'spawned 2 refused 0 code 0\nwaited ok 2\n');
  const missing = await run('spawn', '1', './nosuch.wasm');
  assert.equal(missing.stdout, `spawned 0 refused 1 code ${GUEST_ERR.NOT_FOUND}\nwaited ok 0\n`);
});
