// The interpreter child's stdout and stderr (plain JavaScript, imported by child.mjs; bundled
// into dist/python-child.mjs): what Pyodide's writers capture for the result, and — when the
// call asked for it — what is streamed to the parent while the snippet runs.
//
// Owns: the capped capture (at most `limit` bytes per stream kept; the rest counted, not kept),
// the result's text (cut at a UTF-8 boundary when truncated), and the stream: kept bytes only,
// decoded incrementally (a character split across writes travels whole), batched into
// `{ v: 1, kind: 'output', id, stdout?, stderr? }` messages sent at most every `FLUSH_MS` of
// running (from a write or the fuel refill's `tick`), when `FLUSH_BYTES` are pending, on an idle
// event loop, and before the result.
// Invariant: what is streamed is a prefix of what is kept, so it is bounded by the same cap; the
// number of messages is bounded by the call's duration / FLUSH_MS + 2 × cap / FLUSH_BYTES, so a
// snippet printing in a tight loop grows neither this process's queue nor the parent's beyond
// the cap (plus the messages' small envelopes).
//
// Does not protect against: a parent that never reads (the IPC queue then holds at most the
// capped output); output a snippet never flushes (a partial line in its own buffers waits for its
// newline or the end of the call — the lane makes sys.stdout/stderr write-through when streaming).

/** Longest a written byte waits before it is sent while the snippet keeps running. */
export const FLUSH_MS = 10;
/** Pending bytes that are sent at once, whatever the time. */
export const FLUSH_BYTES = 64 * 1024;

function sink() {
  return { chunks: [], kept: 0, dropped: 0, limit: 1 << 20, forward: false, pending: [], decoder: new TextDecoder('utf-8') };
}

/** Cut at a UTF-8 boundary: a truncated multi-byte character is dropped, not mangled. */
function drain(s) {
  let b = Buffer.concat(s.chunks);
  let end = b.length;
  if (s.dropped > 0) while (end > 0 && (b[end - 1] & 0xc0) === 0x80) end--;
  if (s.dropped > 0 && end > 0 && b[end - 1] >= 0xc0) end--;
  if (end !== b.length && s.dropped > 0) b = b.subarray(0, end);
  return b.toString('utf8');
}

/** `send(message)` delivers one message to the parent (process.send). */
export function createOutput(send) {
  const streams = { stdout: sink(), stderr: sink() };
  const state = { id: 0, since: Infinity, pendingBytes: 0, timer: null };

  function flush() {
    if (state.timer !== null) {
      clearTimeout(state.timer);
      state.timer = null;
    }
    if (state.pendingBytes === 0) return;
    const msg = { v: 1, kind: 'output', id: state.id };
    for (const name of ['stdout', 'stderr']) {
      const s = streams[name];
      if (s.pending.length === 0) continue;
      const text = s.decoder.decode(Buffer.concat(s.pending), { stream: true });
      s.pending = [];
      if (text.length > 0) msg[name] = text;
    }
    state.pendingBytes = 0;
    state.since = Infinity;
    if (msg.stdout !== undefined || msg.stderr !== undefined) send(msg);
  }

  function tick(now) {
    if (state.pendingBytes > 0 && now - state.since >= FLUSH_MS) flush();
  }

  function writer(s) {
    return {
      write(buf) {
        const room = s.limit - s.kept;
        if (room > 0) {
          const take = Buffer.from(buf.length <= room ? buf : buf.subarray(0, room));
          s.chunks.push(take);
          s.kept += take.length;
          if (s.forward) {
            s.pending.push(take);
            const now = performance.now();
            if (state.pendingBytes === 0) {
              state.since = now;
              // Python may now wait on the event loop (top-level await): send it from there too.
              state.timer = setTimeout(flush, FLUSH_MS);
            }
            state.pendingBytes += take.length;
            if (state.pendingBytes >= FLUSH_BYTES) flush();
            else tick(now);
          }
        }
        if (buf.length > room) s.dropped += buf.length - Math.max(room, 0);
        return buf.length;
      },
    };
  }

  return {
    stdout: writer(streams.stdout),
    stderr: writer(streams.stderr),
    /** Set the call's cap and which streams are forwarded (once, when the exec arrives). */
    configure({ id, limit, stdout, stderr }) {
      state.id = id;
      streams.stdout.limit = streams.stderr.limit = limit;
      streams.stdout.forward = stdout === true;
      streams.stderr.forward = stderr === true;
    },
    tick,
    flush,
    /** The result's text and dropped counts. */
    collect() {
      return {
        stdout: drain(streams.stdout),
        stderr: drain(streams.stderr),
        stdoutDropped: streams.stdout.dropped,
        stderrDropped: streams.stderr.dropped,
      };
    },
  };
}
