/**
 * A tool call's controls from its MCP request: the SDK's `signal` (aborted by the client's
 * `notifications/cancelled`, or when the connection closes) cancels the guest; a `progressToken`
 * in the request's `_meta` turns the guest's stdout into `notifications/progress` whose
 * `message` is the text written since the last one.
 *
 * Owns: the cadence of progress notifications — the first at once, then at most one per
 * PROGRESS_INTERVAL_MS, each message at most MAX_PROGRESS_MESSAGE_CHARS, `progress` the count of
 * characters sent so far (strictly increasing, as the spec asks), the rest flushed before the
 * result is returned.
 * Invariant: no notification is sent without a token or after the request was cancelled; how
 * many are sent is bounded by the output cap (the tap stops there) and the call's deadline.
 *
 * Does not protect against: a client that asked for progress and reads it slowly — the transport
 * buffers what the cadence sends, at most the output cap.
 */

import type { CallControls } from '../../lanes/controls.ts';

export const PROGRESS_INTERVAL_MS = 100;
export const MAX_PROGRESS_MESSAGE_CHARS = 16 * 1024;

/** What the SDK hands a tool handler, the part used here. */
export interface ToolExtra {
  readonly signal: AbortSignal;
  readonly _meta?: { readonly progressToken?: string | number | undefined; readonly [key: string]: unknown } | undefined;
  sendNotification(notification: { method: 'notifications/progress'; params: { progressToken: string | number; progress: number; message?: string } }): Promise<void>;
}

export interface ToolControls {
  readonly controls: CallControls;
  /** Send what is still buffered; resolves once it was handed to the transport (or dropped). */
  flush(): Promise<void>;
}

export function toolControls(extra: ToolExtra | undefined): ToolControls {
  if (!extra) return { controls: {}, flush: async () => {} };
  const token = extra._meta?.progressToken;
  if (token === undefined || (typeof token !== 'string' && typeof token !== 'number')) return { controls: { signal: extra.signal }, flush: async () => {} };
  let pending = '';
  let sent = 0;
  let last = -Infinity;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let chain: Promise<void> = Promise.resolve();
  const send = (): void => {
    if (timer) clearTimeout(timer);
    timer = null;
    last = performance.now();
    while (pending.length > 0) {
      const message = pending.slice(0, MAX_PROGRESS_MESSAGE_CHARS);
      pending = pending.slice(message.length);
      if (extra.signal.aborted) continue;
      sent += message.length;
      const progress = sent;
      chain = chain.then(() => extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, message } }).catch(() => undefined));
    }
  };
  const onStdout = (chunk: string): void => {
    pending += chunk;
    const wait = last + PROGRESS_INTERVAL_MS - performance.now();
    if (wait <= 0) send();
    else timer ??= setTimeout(send, wait);
  };
  return {
    controls: { signal: extra.signal, onStdout },
    flush: () => {
      send();
      return chain;
    },
  };
}
