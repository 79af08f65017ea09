/**
 * A wasm module uploaded as base64 text — by MCP's `run_wasm` or the HTTP API's `module` field.
 *
 * Owns: the upload bound and the decoding rule. Invariant: the decoded size is computed from the
 * text's length and refused (TOO_LARGE) before anything is decoded, so a module bomb costs no
 * allocation; anything that is not canonical base64 is INVALID_MODULE.
 *
 * Does not protect against: a valid module that is hostile — the engine's walls are for that.
 */

import { SandboxError } from '../errors.ts';

/** A module upload decodes to at most 16 MiB. */
export const MAX_MODULE_BYTES = 16 * 1024 * 1024;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Base64 text → module bytes, or INVALID_MODULE / TOO_LARGE before decoding. */
export function decodeModuleBase64(text: string, maxBytes: number = MAX_MODULE_BYTES): Uint8Array {
  if (text.length % 4 !== 0 || !BASE64.test(text)) {
    throw new SandboxError('INVALID_MODULE', 'module must be a base64-encoded WebAssembly module');
  }
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const decodedBytes = (text.length / 4) * 3 - padding;
  if (decodedBytes > maxBytes) {
    throw new SandboxError('TOO_LARGE', `the module is ${decodedBytes} bytes; the limit is ${maxBytes}`, { bytes: decodedBytes, maxBytes });
  }
  return new Uint8Array(Buffer.from(text, 'base64'));
}
