/**
 * `membrane:engine/run-command` for components (cap `commands`): a registered command run on the
 * caller's thread, exactly as the core-module `run_command` import runs it (commands.ts) — the
 * same host call, depth limit, shared time and fuel — reached through a scratch memory of its own
 * that carries the request and response bytes.
 *
 * Owns: the translation between the interface's values (name, args, stdin → status, stdout,
 * stderr, error) and the command ABI's byte layouts (abi/command.ts), and the retry with a
 * bigger buffer for a response that did not fit (the kept answer, nothing run twice).
 * Invariant: nothing here decides anything: the main thread checks the cap, the registry, the
 * depth and the cadence for every call.
 *
 * Does not protect against: nothing beyond commands.ts.
 */

import { GUEST_ERR, decodeResponse, encodeRequest } from '../../abi/command.ts';
import { GuestMemory } from '../../abi/memory.ts';
import { ownBytes } from '../../wasi/p2/index.ts';
import { Commands, type CommandsContext } from './commands.ts';

const PAGE = 65536;
/** The first response buffer; a bigger answer is fetched again at its size. */
const FIRST_OUT_CAP = 64 * 1024;

export interface CommandOutput {
  status: number;
  stdout: Uint8Array;
  stderr: Uint8Array;
  error: string;
}

export function runCommandInterface(ctx: Omit<CommandsContext, 'memory'>, codes: Readonly<Record<number, string>>): Record<string, unknown> {
  const memory = new GuestMemory();
  const runImport = new Commands({ ...ctx, memory }).imports()['run_command']!;
  return {
    run: (name: string, args: readonly string[], stdin: unknown): CommandOutput => {
      ctx.state.rethrow();
      const request = encodeRequest([name, ...Array.from(args, String)], ownBytes(stdin));
      let cap = FIRST_OUT_CAP;
      for (let attempt = 0; attempt < 2; attempt++) {
        const scratch = new WebAssembly.Memory({ initial: Math.ceil((request.length + cap) / PAGE) });
        memory.attach(scratch);
        new Uint8Array(scratch.buffer).set(request, 0);
        const n = runImport(0, request.length, request.length, cap);
        if (n < 0) throw codes[n] ?? 'unavailable';
        if (n > cap) {
          cap = n; // kept by the retry hold: the command does not run again
          continue;
        }
        const response = decodeResponse(new Uint8Array(scratch.buffer, request.length, n).slice());
        if (!response) throw 'invalid';
        return { status: response.status, stdout: response.stdout, stderr: response.stderr, error: response.error };
      }
      throw codes[GUEST_ERR.UNAVAILABLE]!;
    },
  };
}
