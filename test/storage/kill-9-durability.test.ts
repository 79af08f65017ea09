/**
 * An acknowledged VFS write survives SIGKILL of the writing process mid-stream — a write is
 * acknowledged when its call returns; a staged creation (WASI path_open + fd_write) with its
 * bytes when `release` (fd_close) returns; held writes (WASI fd_write) when the next operation
 * commits them or a sync returns — past that, a held span is wholly there or wholly absent.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { Vfs } from '../../src/storage/vfs.ts';
import { logLine, record, smallRecord, streamRecord } from './fixtures/durable-writer.ts';
import { tempDir } from './helpers.ts';

const WRITER = fileURLToPath(new URL('./fixtures/durable-writer.ts', import.meta.url));
/** Acks to see before killing; the kill lands while later writes are in flight. */
const KILL_AFTER_ACKS = 40;

test('every write acknowledged before kill -9 is present and intact after reopening', { timeout: 60_000 }, async () => {
  const { dir, cleanup } = tempDir();
  const file = join(dir, 'durable.sqlite');
  const child = spawn(process.execPath, ['--import', 'tsx', WRITER, file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  let lastAck = -1;
  let lastSynced = -1;
  let pending = '';
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  child.stdout.on('data', (d: Buffer) => {
    pending += d.toString();
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      const synced = /^synced (\d+)$/.exec(line);
      if (synced) {
        lastSynced = Number(synced[1]);
        continue;
      }
      const m = /^acked (\d+)$/.exec(line);
      assert.ok(m, `unexpected output: ${line}`);
      const n = Number(m[1]);
      assert.equal(n, lastAck + 1, 'acks arrive in order');
      lastAck = n;
      if (n >= KILL_AFTER_ACKS && child.exitCode === null && !child.killed) child.kill('SIGKILL');
    }
  });
  const signal = await exited;
  assert.equal(signal, 'SIGKILL', `writer ended without being killed: ${stderr}`);
  assert.ok(lastAck >= KILL_AFTER_ACKS, `only ${lastAck + 1} acks`);

  const vfs = Vfs.open({ file });
  try {
    for (let i = 0; i <= lastAck; i++) {
      const s = vfs.stat('workspace', `/out/r${i}`);
      const want = record(i);
      assert.equal(s.size, want.length, `size of record ${i}`);
      assert.ok(Buffer.from(vfs.read(s.ino, 0, want.length)).equals(want), `contents of record ${i}`);
      const small = vfs.stat('workspace', `/staged/s${i}`);
      const wantSmall = smallRecord(i);
      assert.equal(small.size, wantSmall.length, `size of staged file ${i}`);
      assert.ok(Buffer.from(vfs.read(small.ino, 0, wantSmall.length)).equals(wantSmall), `contents of staged file ${i}`);
    }
    // Past the last ack the parent read (the writer ran on until the kill lands), a staged file is
    // wholly there or wholly absent: never empty or torn.
    for (const name of vfs.readdir(vfs.stat('workspace', '/staged').ino).map((e) => e.name)) {
      const i = Number(name.slice(1));
      const s = vfs.stat('workspace', `/staged/${name}`);
      assert.ok(Buffer.from(vfs.read(s.ino, 0, s.size)).equals(smallRecord(i)), `${name} is whole`);
    }
    const log = vfs.stat('workspace', '/log');
    const line = logLine(0).length;
    assert.ok(log.size >= (lastAck + 1) * line, 'log holds every acked line');
    const text = Buffer.from(vfs.read(log.ino, 0, (lastAck + 1) * line));
    for (let i = 0; i <= lastAck; i++) assert.ok(text.subarray(i * line, (i + 1) * line).equals(logLine(i)), `log line ${i}`);
    // The held stream: every round's span through the last sync survives (and each round's
    // first operation committed the round before: through lastAck - 1); past that, the stream
    // ends at a round's boundary — a held span is wholly there or wholly absent, never torn.
    const stream = vfs.stat('workspace', '/stream');
    const ends = [0];
    for (let i = 0; ends[i] as number < stream.size; i++) ends.push((ends[i] as number) + streamRecord(i).length);
    assert.equal(ends.at(-1), stream.size, `the stream (${stream.size} bytes) ends at a round's boundary`);
    const rounds = ends.length - 1;
    assert.ok(rounds >= lastAck && rounds - 1 >= lastSynced, `the stream holds ${rounds} rounds; acked ${lastAck}, synced ${lastSynced}`);
    const streamed = Buffer.from(vfs.read(stream.ino, 0, stream.size));
    for (let i = 0; i < rounds; i++) {
      assert.ok(streamed.subarray(ends[i], ends[i + 1]).equals(streamRecord(i)), `stream round ${i}`);
    }
    // Whatever was in flight is either wholly there or wholly absent (each write is one transaction).
    const usage = vfs.getUsage();
    assert.ok(usage.inodes >= lastAck + 1 + 5);
  } finally {
    vfs.close();
    cleanup();
  }
});
