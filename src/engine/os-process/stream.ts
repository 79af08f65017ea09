/**
 * Streaming an `os_process` call's output while it runs (the caller's `onStdout`, `onStderr`,
 * and an exec's `onProgress`): the child's engine calls its own callbacks, which write each chunk
 * as an `out` line on its stdout (after BROKER_MARK, beside the broker requests); the parent hands
 * each to the caller's callback.
 *
 * Owns: which streams a call asks for (sent with its request: a child streams nothing it was not
 * asked for), the child's writer, and the parent's delivery — each stream through an `OutputTap`
 * bounded by the engine's output cap (as a worker's stream is: a callback that throws is
 * not called again, and the call goes on), progress messages at most MAX_PROGRESS of at most MAX_PROGRESS_CHARS each.
 * Invariant: the chunks of a stream joined are what the child's engine delivered to its own
 * callback — the result's text, less its truncation marker — and nothing reaches a callback after
 * the call's end. A child's `out` lines are hostile input like its requests: the shape is checked
 * by broker-proxy.ts (a malformed line or one for a stream not asked for kills the child), their
 * bytes in all are bounded (MAX_STREAM_BYTES: more kills the child), and the taps cap what a
 * callback sees whatever the child sends.
 * Does not protect against: a callback that blocks the parent's thread (lanes/controls.ts).
 */

import { OutputTap } from '../../lanes/controls.ts';
import { BROKER_MARK } from './protocol.ts';

/** The streams: 1 stdout, 2 stderr, 3 progress messages. */
export type StreamFd = 1 | 2 | 3;

/** An output line from the child (after BROKER_MARK). */
export interface OutputLine {
  readonly kind: 'out';
  readonly fd: StreamFd;
  readonly text: string;
}

const MAX_PROGRESS = 256;
const MAX_PROGRESS_CHARS = 500;

/**
 * The most text a child may stream in all (decoded, in UTF-16 units, which a stream's UTF-8 bytes
 * never outnumber): both streams at the cap and every progress message, with room.
 */
export const maxStreamChars = (limitBytes: number): number => 2 * limitBytes + MAX_PROGRESS * MAX_PROGRESS_CHARS + (64 << 10);

interface Callbacks {
  readonly onStdout?: ((chunk: string) => void) | undefined;
  readonly onStderr?: ((chunk: string) => void) | undefined;
  readonly onProgress?: ((what: string) => void) | undefined;
}

/** The parent's side for one call: the streams to ask for, the sink for the child's lines, the end. */
export interface StreamDesk {
  readonly fds: readonly StreamFd[];
  readonly budget: number;
  deliver(fd: StreamFd, text: string): void;
  end(): void;
}

/** The desk for a call's callbacks, or null when it gave none (nothing is streamed). */
export function streamDesk(o: Callbacks, limitBytes: number): StreamDesk | null {
  const fn = (f: unknown): ((s: string) => void) | undefined => (typeof f === 'function' ? (f as (s: string) => void) : undefined);
  const taps = [new OutputTap(fn(o.onStdout), limitBytes), new OutputTap(fn(o.onStderr), limitBytes)] as const;
  const progress = fn(o.onProgress);
  const fds: StreamFd[] = [];
  if (taps[0].active) fds.push(1);
  if (taps[1].active) fds.push(2);
  if (progress) fds.push(3);
  if (fds.length === 0) return null;
  let open = true;
  let messages = 0;
  return {
    fds,
    budget: maxStreamChars(limitBytes),
    deliver(fd, text) {
      if (!open) return;
      if (fd !== 3) return taps[fd === 1 ? 0 : 1].push(text);
      if (++messages > MAX_PROGRESS) return;
      try {
        progress!(text.slice(0, MAX_PROGRESS_CHARS));
      } catch {
        messages = MAX_PROGRESS; // a callback that throws is not called again, and the call goes on (as OutputTap)
      }
    },
    end() {
      if (!open) return;
      open = false;
      taps[0].end();
      taps[1].end();
    },
  };
}

/** The child's callbacks for the streams its request asks for: each chunk one `out` line on stdout. */
export function childCallbacks(fds: unknown, write: (line: string) => void): Callbacks {
  const asked = Array.isArray(fds) ? fds : [];
  const line = (fd: StreamFd) => (text: string): void => write(`${BROKER_MARK}${JSON.stringify({ kind: 'out', fd, text } satisfies OutputLine)}\n`);
  return {
    ...(asked.includes(1) ? { onStdout: line(1) } : {}),
    ...(asked.includes(2) ? { onStderr: line(2) } : {}),
    ...(asked.includes(3) ? { onProgress: line(3) } : {}),
  };
}
