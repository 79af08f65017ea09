/** `membrane profiles`: the policy literal, printed. */

import { PROFILE_NAMES, PROFILES, allowHttp } from '../../policy/profiles.ts';
import { parse, printJson } from './args.ts';

export async function profilesCommand(argv: string[]): Promise<number> {
  const { values } = parse(argv, { json: { type: 'boolean' } });
  const rows = PROFILE_NAMES.map((n) => ({ ...PROFILES[n], caps: [...PROFILES[n].caps], allowHttp: allowHttp(PROFILES[n].caps) }));
  if (values['json'] === true) {
    printJson(rows);
    return 0;
  }
  const lines = ['profile  memory    timeout    fuel   http  caps'];
  for (const r of rows) {
    lines.push(
      `${r.name.padEnd(8)} ${`${r.memoryBytes / 1048576} MiB`.padEnd(9)} ${`${r.timeoutMs} ms`.padEnd(10)} ${r.fuel.toExponential(0).padEnd(6)} ${(r.allowHttp ? 'yes' : 'no').padEnd(5)} ${r.caps.join(' ')}`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}
