/**
 * `membrane instrument IN -o OUT [--json]`: write the fuel-metered form of a module (what the
 * engine runs), for inspection or for shipping pre-instrumented.
 */

import { writeFileSync } from 'node:fs';
import { instrumentFuel } from '../../wasm/index.ts';
import { UsageError, loadModule, parse, printJson, str } from './args.ts';

export async function instrumentCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { output: { type: 'string', short: 'o' }, json: { type: 'boolean' } });
  const input = positionals[0];
  const output = str(values['output']);
  if (!input || positionals.length > 1 || !output) throw new UsageError('instrument takes IN.wasm and -o OUT.wasm');
  const bytes = await loadModule(input);
  const t0 = performance.now();
  const { bytes: out, stats } = instrumentFuel(bytes);
  const ms = Math.round((performance.now() - t0) * 1000) / 1000;
  writeFileSync(output, out);
  if (values['json'] === true) {
    printJson({ input, output, ...stats, ms });
  } else {
    process.stdout.write(
      `${output}: ${stats.inputBytes} → ${stats.outputBytes} bytes, ${stats.functions} functions, ${stats.loops} loops, ` +
        `${stats.chargePoints} charge points, ${stats.bulkSites} bulk sites, ${ms} ms\n`,
    );
  }
  return 0;
}
