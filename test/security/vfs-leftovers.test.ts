// A killed engine cannot leave its snippets' private VFS files behind forever: the next engine
// process to open a private VFS collects the files whose owning process is gone — and never a live
// process's files, nor a named VFS that merely looks like one.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { tempDir } from '../helpers/tmp.ts';

let engine: Engine;
let dir: string;

before(() => {
  const home = tempDir('membrane-vfs-leftovers-');
  process.env['MEMBRANE_HOME'] = home;
  dir = join(home, 'vfs');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  engine = createEngine({ poolSize: 0, brokers: { databaseFile: join(home, 'engine.sqlite') } });
});
after(() => engine.close());

const privateName = (pid: number): string => `exec-${pid}-${randomBytes(32).toString('hex')}.sqlite`;

test('a dead engine process\'s private VFS files (and -wal/-shm) are removed by the next private VFS; a live process\'s and a named VFS stay', async () => {
  // A process that has exited (and been reaped): its pid names no live process.
  const gone = spawnSync(process.execPath, ['-e', '']);
  assert.equal(gone.status, 0);
  const deadPid = gone.pid!;
  assert.throws(() => process.kill(deadPid, 0), { code: 'ESRCH' });
  const dead = privateName(deadPid);
  const deadFiles = [dead, `${dead}-wal`, `${dead}-shm`];
  // This process's own (an engine here still using it) and another live process's (the test runner).
  const mine = privateName(process.pid);
  const other = privateName(process.ppid);
  // A valid VFS name of the same shape, but short enough to be a name: never a leftover.
  const named = `exec-${deadPid}-leftover.sqlite`;
  for (const f of [...deadFiles, mine, other, named]) writeFileSync(join(dir, f), 'x', { mode: 0o600 });

  const r = await engine.exec({ language: 'js', code: "vfs.write('/a', 'x'); vfs.read('/a')", profile: 'minimal' });
  assert.equal(r.result, 'x', JSON.stringify(r));

  for (const f of deadFiles) assert.equal(existsSync(join(dir, f)), false, `${f} was left`);
  for (const f of [mine, other, named]) assert.equal(existsSync(join(dir, f)), true, `${f} was removed`);
  // The call's own private VFS is gone with the call, too.
  assert.deepEqual(readdirSync(dir).sort(), [mine, named, other].sort());
});
