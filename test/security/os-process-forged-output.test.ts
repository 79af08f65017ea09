// The attack: a hijacked os_process child abuses the output stream the parent hands to the
// caller's `onStdout`/`onStderr`/`onProgress` — output for a stream the call never asked for, a
// stream that is no stream, text past the output cap, an endless flood of lines. Each is hostile
// input: a line for a stream not asked for, or a malformed one, kills the child (INTERNAL); a
// callback never sees more than the engine's output cap, however much the child sends; past the
// stream's whole budget the child is killed; a callback that throws is dropped, the call goes on.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { maxStreamChars, streamDesk } from '../../src/engine/os-process/stream.ts';
import { callerOf, forged, testBrokers, type Record_ } from '../helpers/forged-child.ts';

const records: Record_[] = [];
const brokers = testBrokers(records);
const out = (fd: unknown, text: unknown): string => JSON.stringify({ kind: 'out', fd, text });
const isInternal = (e: unknown, why: RegExp): boolean => e instanceof SandboxError && e.code === 'INTERNAL' && why.test(e.message);

test('output a call did not ask to stream kills the child', async () => {
  const none = await forged(brokers, callerOf('t', []), { lines: [out(1, 'sneaky')] });
  assert.ok(isInternal(none.error, /output it was not asked to stream/), String(none.error));
  const got: string[] = [];
  const onlyStdout = streamDesk({ onStdout: (s) => got.push(s) }, 1 << 20);
  const wrongFd = await forged(brokers, callerOf('t', []), { lines: [out(1, 'fine'), out(2, 'to stderr')] }, 10_000, undefined, { stream: onlyStdout });
  assert.ok(isInternal(wrongFd.error, /output it was not asked to stream/), String(wrongFd.error));
  assert.deepEqual(got, ['fine']);
});

test('a malformed output line (no such stream, text not a string) kills the child', async () => {
  for (const line of [out(7, 'x'), out(1, 42), out('1', 'x'), JSON.stringify({ kind: 'out', fd: 1 })]) {
    const desk = streamDesk({ onStdout: () => {}, onStderr: () => {} }, 1 << 20);
    const r = await forged(brokers, callerOf('t', []), { lines: [line] }, 10_000, undefined, { stream: desk });
    assert.ok(isInternal(r.error, /malformed/), `${line}: ${String(r.error)}`);
  }
});

test('a callback sees at most the output cap; a flood past the stream budget kills the child', async () => {
  const limit = 4096;
  let seen = 0;
  const desk = streamDesk({ onStdout: (s) => void (seen += Buffer.byteLength(s)) }, limit);
  const big = 'y'.repeat(1000);
  const lines = Math.ceil(maxStreamChars(limit) / big.length) + 2;
  const r = await forged(brokers, callerOf('t', []), { flood: lines, line: out(1, big) }, 20_000, undefined, { stream: desk });
  assert.ok(isInternal(r.error, /more output than its cap/), String(r.error));
  assert.equal(seen, limit, 'the callback got exactly the cap, nothing past it');
});

test('a callback that throws is not called again and does not end the call; the child\'s reply still arrives', async () => {
  let calls = 0;
  const desk = streamDesk({ onStdout: () => { calls++; throw new Error('caller bug'); }, onProgress: () => { throw new Error('caller bug'); } }, 1 << 20);
  const r = await forged(brokers, callerOf('t', []), { lines: [out(1, 'a'), out(3, 'starting'), out(3, 'again'), out(1, 'b')] }, 10_000, undefined, { stream: desk });
  assert.equal(r.error, null, String(r.error));
  assert.deepEqual(r.answers, []);
  assert.equal(calls, 1);
});
