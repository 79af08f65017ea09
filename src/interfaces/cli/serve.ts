/**
 * `membrane serve [--port N] [--host H] [--config FILE] [--log-level L] [--json]`: the HTTP API,
 * the MCP endpoint and the dashboard (src/interfaces/http). The log level is `--log-level`, else
 * the config's `server.logLevel`, else info.
 *
 * Prints exactly one line on stdout first — `membrane serve: listening on http://HOST:PORT` (or,
 * with --json, `{"listening":"http://HOST:PORT"}`) — then logs JSON lines on stderr. SIGTERM and
 * SIGINT shut it down gracefully (in-flight requests finish or time out, then the engine closes);
 * a second signal exits at once.
 *
 * A start that fails ends the process at once: an address that cannot be bound is one line
 * (`address 127.0.0.1:7070 is in use`, not permitted, not available) and BIND_FAILED_EXIT (3);
 * a file the host refuses (an unusable $MEMBRANE_HOME) is `cannot start: REASON` and 64; anything
 * else is the error table's code. startServer releases what it opened either way.
 */

import { createServer } from 'node:net';
import { exitCodeFor } from '../../errors.ts';
import { loadConfig } from '../config.ts';
import { LOG_LEVELS, isLogLevel } from '../http/log.ts';
import { DEFAULT_HOST, DEFAULT_PORT, startServer } from '../http/server.ts';
import { UsageError, parse, str } from './args.ts';
import { optional } from './units.ts';
import { BIND_FAILED_EXIT } from './usage.ts';

const BIND_ERRORS: Readonly<Record<string, string>> = {
  EADDRINUSE: 'is in use',
  EACCES: 'is not permitted (ports below 1024 need privileges)',
  EPERM: 'is not permitted',
  EADDRNOTAVAIL: 'is not available on this host',
};

/** Bind `host:port` and let it go again; rejects with the bind error. */
function probe(host: string, port: number): Promise<void> {
  const s = createServer();
  return new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.listen({ host, port, exclusive: true }, () => s.close(() => resolve()));
  });
}

/** The one line for a bind failure, or null when `e` is something else. */
const printable = (s: string): string =>
  s.length > 100 || /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\s]/.test(s) ? JSON.stringify(s.slice(0, 100)).replace(/[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : s;

export function bindFailure(e: unknown, host: string, port: number): string | null {
  const err = e as NodeJS.ErrnoException & { address?: unknown; port?: unknown };
  if (err === null || typeof err !== 'object' || typeof err.code !== 'string') return null;
  if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') return `cannot listen on ${printable(host)}: no such host`;
  const why = BIND_ERRORS[err.code];
  if (why === undefined) return null;
  const addr = typeof err.address === 'string' ? err.address : host;
  const p = typeof err.port === 'number' ? err.port : port;
  return `address ${addr.includes(':') ? `[${printable(addr)}]` : printable(addr)}:${p} ${why}`;
}

export async function serveCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { port: { type: 'string' }, host: { type: 'string' }, config: { type: 'string' }, 'log-level': { type: 'string' }, json: { type: 'boolean' } });
  if (positionals.length > 0) throw new UsageError('serve takes no arguments');
  const level = str(values['log-level']);
  if (level !== undefined && !isLogLevel(level)) throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}`);
  const port = optional('port', values['port'], 'count', { min: 0, max: 65535 });
  const configFile = str(values['config']);
  const config = configFile ? loadConfig(configFile) : null;
  const host = str(values['host']);
  const where = { host: host ?? config?.server?.host ?? DEFAULT_HOST, port: port ?? config?.server?.port ?? DEFAULT_PORT };
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    // Try the address before starting an engine: a busy port fails in milliseconds.
    if (where.port !== 0) await probe(where.host, where.port);
    server = await startServer({ config, ...(level !== undefined ? { logger: { level } } : {}), ...(port !== undefined ? { port } : {}), ...(host !== undefined ? { host } : {}) });
  } catch (e) {
    const line = bindFailure(e, where.host, where.port);
    if (line !== null) {
      process.stderr.write(`membrane serve: ${line}\n`);
      return BIND_FAILED_EXIT;
    }
    // The host refused a file (an unusable $MEMBRANE_HOME, say): the operator's setup, not a bug.
    const err = e as NodeJS.ErrnoException;
    if (err instanceof Error && typeof err.code === 'string' && typeof err.syscall === 'string') {
      process.stderr.write(`membrane serve: cannot start: ${err.message.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?')}\n`);
      return exitCodeFor('POLICY_INVALID');
    }
    throw e;
  }
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
