/**
 * `membrane instrument IN -o OUT [--json]`: write the fuel-metered form of a module (what the
 * engine runs), for inspection or for shipping pre-instrumented. The input is validated first
 * (V8): an invalid module is INVALID_MODULE with V8's reason and no output file is written.
 *
 * The file written is the metered module plus its original in a `membrane.original` custom
 * section (instrumented.ts), so `membrane run OUT.wasm` runs it metered exactly once; given such a
 * file again, `instrument` meters its original (the same output), never the metered code twice.
 */

import { writeFileSync } from 'node:fs';
import { exitCodeFor, toSandboxError } from '../../errors.ts';
import { instrumentFuel } from '../../wasm/index.ts';
import { UsageError, jsonError, loadModule, parse, printJson, str } from './args.ts';
import { runnableModule, withOriginal } from './instrumented.ts';

export async function instrumentCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { output: { type: 'string', short: 'o' }, json: { type: 'boolean' } });
  const input = positionals[0];
  const output = str(values['output']);
  if (!input || positionals.length > 1 || !output) throw new UsageError('instrument takes IN.wasm and -o OUT.wasm');
  const json = values['json'] === true;
  let result: ReturnType<typeof instrumentFuel>;
  let ms: number;
  let original: Uint8Array;
  try {
    const bytes = runnableModule(await loadModule(input));
    original = bytes;
    const t0 = performance.now();
    result = instrumentFuel(bytes);
    ms = Math.round((performance.now() - t0) * 1000) / 1000;
  } catch (e) {
    if (!json) throw e;
    printJson({ ...jsonError(e), input });
    return exitCodeFor(toSandboxError(e).code);
  }
  const { bytes: out, stats } = result;
  const file = withOriginal(out, original);
  writeFileSync(output, file);
  if (json) {
    printJson({ ok: true, input, output, ...stats, fileBytes: file.length, ms });
  } else {
    process.stdout.write(
      `${output}: ${stats.inputBytes} → ${stats.outputBytes} bytes, ${stats.functions} functions, ${stats.loops} loops, ` +
        `${stats.chargePoints} charge points, ${stats.bulkSites} bulk sites, ${ms} ms (file ${file.length} bytes: the original rides along for membrane run)\n`,
    );
  }
  return 0;
}
