/** Test helper for call controls (cancel, streamed output): the guest and two waits. */

import { wat } from './wat.ts';

/** test/fixtures/wat/controls.wat (its header lists the exports). */
export function controlsGuest(): Promise<Uint8Array> {
  return wat('controls');
}

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Poll `check` every 10 ms until it holds (or `ms` passed); returns whether it held. */
export async function eventually(check: () => boolean, ms = 5_000): Promise<boolean> {
  const until = performance.now() + ms;
  while (!check()) {
    if (performance.now() > until) return false;
    await sleep(10);
  }
  return true;
}
