/**
 * Embedder capabilities: the names of the capabilities an embedder adds with
 * `createEngine({ hostFunctions })` (DESIGN §9) and of their functions.
 *
 * Owns: the shape of a host cap name (`vendor:name`, lowercase, one colon — so it can never be
 * a built-in cap word, which has none), the vendors Membrane keeps for itself (`membrane`, whose
 * `membrane:fuel` is the fuel meter's import module, and `wasi`), the shape of a function name,
 * and the global a source lane shows a host cap as (`acme:orders` → `acme_orders`).
 * Invariant: a name that passed `checkHostCapName` is a valid wasm import module name, a JS and
 * Python identifier once mapped by `hostCapGlobal`, safe in a log line and an audit record, and
 * never one of Membrane's own import modules.
 *
 * Does not protect against: two embedder caps whose globals collide (`a_b:c`, `a:b_c`) — the
 * engine refuses that set when it is configured (engine/options.ts).
 */

import { SandboxError } from '../errors.ts';

/** `vendor:name`, each part a lowercase identifier; ≤ 64 characters in all. */
const HOST_CAP_PATTERN = /^[a-z][a-z0-9_]*:[a-z][a-z0-9_]*$/;
export const MAX_HOST_CAP_CHARS = 64;
/** A function name: an identifier of ≤ 32 characters that is not a dunder (`__proto__`, `__class__`). */
const FUNCTION_PATTERN = /^(?!__)[A-Za-z_][A-Za-z0-9_]{0,31}$/;
/** The largest JSON argument or result an operator may allow a host function (below the bridges' 8 MiB frames). */
export const MAX_HOST_PAYLOAD_BYTES = 4 * 1024 * 1024;
/** Vendors Membrane keeps: `membrane:fuel` is the fuel meter's import module. */
export const RESERVED_VENDORS: readonly string[] = Object.freeze(['membrane', 'wasi']);

/** Whether `word` has the shape of an embedder cap (it may still be undefined on this engine). */
export function isHostCapName(word: unknown): word is string {
  if (typeof word !== 'string' || word.length > MAX_HOST_CAP_CHARS || !HOST_CAP_PATTERN.test(word)) return false;
  return !RESERVED_VENDORS.includes(word.slice(0, word.indexOf(':')));
}

export function checkHostCapName(word: string): string {
  if (!isHostCapName(word)) {
    throw new SandboxError(
      'POLICY_INVALID',
      `a host function capability is named "vendor:name" (lowercase letters, digits and _, ≤ ${MAX_HOST_CAP_CHARS} characters; vendors ${RESERVED_VENDORS.join(', ')} are reserved)`,
      { cap: String(word).slice(0, 64) },
    );
  }
  return word;
}

/** Whether `name` has the shape of a host function's name (a cap may still not define it). */
export function isHostFunctionName(name: unknown): name is string {
  return typeof name === 'string' && FUNCTION_PATTERN.test(name);
}

export function checkHostFunctionName(cap: string, name: string): string {
  if (!isHostFunctionName(name)) {
    throw new SandboxError('POLICY_INVALID', `host function names are identifiers of ≤ 32 characters not starting with "__" (in "${cap}")`, {
      cap,
      function: String(name).slice(0, 64),
    });
  }
  return name;
}

/** The global (JS) and module-level name (Python) a source lane shows `cap` as. */
export function hostCapGlobal(cap: string): string {
  return cap.replace(':', '_');
}
