// The channel reads and writes its data region through fixed-length views (channel.ts), re-made
// when either side has grown the buffer: a frame grown by the other thread's end is read whole,
// and a frame length past the buffer is INTERNAL, never a read outside it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Channel, INITIAL_CHANNEL_BYTES } from '../../src/engine/bridge/channel.ts';
import { SandboxError } from '../../src/errors.ts';

test('a frame the other end grew the buffer for is read whole through re-made views', () => {
  const mine = new Channel();
  const theirs = new Channel(mine.sab); // the worker's end of the same buffer
  const small = mine.data.length;
  assert.equal(small, INITIAL_CHANNEL_BYTES - 64);
  const big = new Uint8Array(3 * INITIAL_CHANNEL_BYTES).map((_, i) => i & 255);
  theirs.write({ kind: 'big' }, [big]);
  const { header, blobs } = mine.read();
  assert.deepEqual(header, { kind: 'big' });
  assert.equal(blobs[0]!.length, big.length);
  assert.deepEqual(blobs[0], big);
  assert.ok(mine.data.length > small && mine.view.byteLength === mine.data.length, 'my views follow the grown buffer');
});

test('a frame length past the buffer is INTERNAL', () => {
  const ch = new Channel();
  ch.write({ kind: 'x' });
  ch.setFrameLength(ch.sab.byteLength); // the header words leave less than this for the data region
  assert.throws(() => ch.read(), (e: unknown) => e instanceof SandboxError && e.code === 'INTERNAL');
});
