/**
 * `membrane serve [--port N] [--host H] [--config FILE] [--json]`: the HTTP API, the MCP
 * endpoint and the dashboard (src/interfaces/http).
 *
 * Prints exactly one line on stdout first — `membrane serve: listening on http://HOST:PORT` (or,
 * with --json, `{"listening":"http://HOST:PORT"}`) — then logs JSON lines on stderr. SIGTERM and
 * SIGINT shut it down gracefully (in-flight requests finish or time out, then the engine closes);
 * a second signal exits at once.
 */

import { loadConfig } from '../config.ts';
import { startServer } from '../http/server.ts';
import { UsageError, parse, str } from './args.ts';
import { optional } from './units.ts';

export async function serveCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { port: { type: 'string' }, host: { type: 'string' }, config: { type: 'string' }, json: { type: 'boolean' } });
  if (positionals.length > 0) throw new UsageError('serve takes no arguments');
  const port = optional('port', values['port'], 'count', { min: 0, max: 65535 });
  const configFile = str(values['config']);
  const config = configFile ? loadConfig(configFile) : null;
  const host = str(values['host']);
  const server = await startServer({ config, ...(port !== undefined ? { port } : {}), ...(host !== undefined ? { host } : {}) });
  process.stdout.write(values['json'] === true ? `${JSON.stringify({ listening: server.url })}\n` : `membrane serve: listening on ${server.url}\n`);
  await new Promise<void>((resolve) => {
    let signalled = false;
    const stop = (): void => {
      if (signalled) process.exit(130);
      signalled = true;
      void server.close().then(resolve, resolve);
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
  return 0;
}
