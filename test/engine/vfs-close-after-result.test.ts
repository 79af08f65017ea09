// A run's file VFS is closed after its result is posted (that close may checkpoint the WAL into
// the database file): everything the run wrote is committed and visible when the result arrives,
// and the pool hands the worker its next job only once the close is done.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Channel } from '../../src/engine/bridge/channel.ts';
import { resolveVfs, Vfs } from '../../src/storage/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-close-after-');
const fileio = new Uint8Array(readFileSync(new URL('../../bench/io/fileio.wasm', import.meta.url)));
const SIZE = 64 * 1024 * 1024;

test('the 64 MiB a run wrote are all readable the moment its result arrives, while its worker closes the database', async () => {
  const engine = testEngine({ poolSize: 1 });
  const r = await engine.run(fileio, { argv: ['big', '/tmp'], profile: 'network', vfs: 'close-after' });
  assert.equal(r.exitCode, 0, JSON.stringify(r.error) + r.stderr);
  const vfs = Vfs.open({ file: resolveVfs({ name: 'close-after' }).file });
  try {
    const s = vfs.stat('tmp', '/big.bin');
    assert.equal(s.size, SIZE);
    // fileio fills 64 KiB piece i with the byte i & 0xff.
    for (const i of [0, 1, 511, 1023]) {
      assert.ok(Buffer.from(vfs.read(s.ino, i * 65536, 65536)).equals(Buffer.alloc(65536, i & 0xff)), `piece ${i}`);
    }
  } finally {
    vfs.close();
  }
  // The same (only) worker runs the next job on the same VFS, after its close.
  const again = await engine.run(fileio, { argv: ['big', '/tmp'], profile: 'network', vfs: 'close-after' });
  assert.equal(again.exitCode, 0, JSON.stringify(again.error) + again.stderr);
  assert.equal(again.stdout, r.stdout, 'same bytes written and read back');
});

test('housekeeping: the main side waits until the worker clears it, and no longer than its bound', async () => {
  const worker = new Channel();
  const main = new Channel(worker.sab);
  assert.equal(await main.housekept(10), true, 'nothing to wait for');
  worker.beginHousekeeping();
  const t = performance.now();
  assert.equal(await main.housekept(30), false, 'still busy at the bound');
  assert.ok(performance.now() - t >= 25, 'waited out the bound');
  setTimeout(() => worker.endHousekeeping(), 20);
  assert.equal(await main.housekept(5_000), true, 'done as soon as the worker cleared it');
});
