/**
 * Modules written by `membrane instrument`, and running them again with `membrane run`.
 *
 * `instrument` writes the metered module followed by one custom section, `membrane.original`,
 * holding the module it was made from. `run` given such a file runs that original through the
 * engine's own pipeline — limits, metering against this run's fuel — so the module is metered
 * exactly once and nothing in the file decides its own budget. The file is accepted only when it
 * is exactly what this membrane's rewriter makes of its original (the section last, the bytes
 * before it equal to `instrumentFuel(original)`): what runs is what the file shows.
 *
 * Invariant: `run` never executes guest-supplied metering. A module that carries the reserved fuel
 * names without a matching original (hand-made, another tool's, an older rewriter's) is
 * INVALID_MODULE saying so, before the engine would refuse the reserved names anyway.
 *
 * Does not protect against: nothing here is a signature — anyone can write a matching file; it
 * only proves that the metered code and the original agree.
 */

import { SandboxError } from '../../errors.ts';
import { FUEL_GLOBAL_EXPORT, FUEL_IMPORT_MODULE, Writer, instrumentFuel } from '../../wasm/index.ts';
import { parseModule } from '../../wasm/module.ts';

export const ORIGINAL_SECTION = 'membrane.original';

/** `metered` with `original` appended as the `membrane.original` custom section. */
export function withOriginal(metered: Uint8Array, original: Uint8Array): Uint8Array {
  const payload = new Writer(original.length + 32).name(ORIGINAL_SECTION).bytes(original).finish();
  return new Writer(metered.length + payload.length + 8).bytes(metered).u8(0).u32(payload.length).bytes(payload).finish();
}

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * The module `run` should execute for `bytes`: the original inside a file `instrument` wrote,
 * else `bytes` unchanged. Anything that is not a parseable module is left to the engine's checks.
 */
export function runnableModule(bytes: Uint8Array): Uint8Array {
  let m: ReturnType<typeof parseModule>;
  try {
    m = parseModule(bytes);
  } catch {
    return bytes;
  }
  const section = m.customs.filter((c) => c.name === ORIGINAL_SECTION).pop();
  const metered = m.imports.some((i) => i.module === FUEL_IMPORT_MODULE) || m.exports.some((e) => e.name === FUEL_GLOBAL_EXPORT);
  if (section === undefined) {
    if (!metered) return bytes;
    throw new SandboxError(
      'INVALID_MODULE',
      `the module already carries fuel metering (${FUEL_IMPORT_MODULE} / ${FUEL_GLOBAL_EXPORT}) but not the original it was made from: run the original, or a file written by this membrane's 'membrane instrument'`,
    );
  }
  const info = m.sections[section.sectionIndex]!;
  if (info.end !== bytes.length) throw new SandboxError('INVALID_MODULE', `the ${ORIGINAL_SECTION} section must be the module's last`);
  const original = bytes.slice(section.data.start, section.data.end);
  let again: Uint8Array;
  try {
    again = instrumentFuel(original).bytes;
  } catch (e) {
    throw new SandboxError('INVALID_MODULE', `the module's ${ORIGINAL_SECTION} section is not a module membrane can meter`, {}, e);
  }
  if (!sameBytes(again, bytes.subarray(0, info.offset))) {
    throw new SandboxError(
      'INVALID_MODULE',
      `the metered code does not match its ${ORIGINAL_SECTION} section (changed after 'membrane instrument', or written by another version): instrument the original again`,
    );
  }
  return original;
}
