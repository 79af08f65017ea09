/**
 * `membrane token create|list|revoke`: the bearer tokens of `membrane serve`, in
 * `$MEMBRANE_HOME/tokens.sqlite`.
 *
 * Invariant: a token's plaintext is printed once, by `create`, and never again — `list` shows ids,
 * tenants, profiles, creation times and revocation, and the store holds only SHA-256 hashes.
 */

import { TokenStore } from '../http/tokens.ts';
import { UsageError, parse, printJson, str } from './args.ts';
import { safeJson } from './audit.ts';

function create(argv: string[]): number {
  const { values, positionals } = parse(argv, { tenant: { type: 'string' }, profile: { type: 'string' }, 'host-cap': { type: 'string', multiple: true }, json: { type: 'boolean' } });
  if (positionals.length > 0) throw new UsageError('token create takes no arguments');
  const tenant = str(values['tenant']);
  if (!tenant) throw new UsageError('token create needs --tenant T');
  const store = new TokenStore();
  try {
    const hostCaps = ((values['host-cap'] as string[] | undefined) ?? []).map(String);
    const t = store.create(tenant, str(values['profile']) ?? 'compute', hostCaps);
    if (values['json'] === true) printJson(t);
    else process.stdout.write(`${t.token}\n(id ${t.id}, tenant ${t.tenant}, profile ${t.profile}${t.hostCaps.length ? `, host caps ${t.hostCaps.join(' ')}` : ''}; shown once — store it now)\n`);
    return 0;
  } finally {
    store.close();
  }
}

function list(argv: string[]): number {
  const { values, positionals } = parse(argv, { json: { type: 'boolean' } });
  if (positionals.length > 0) throw new UsageError('token list takes no arguments');
  const store = new TokenStore();
  try {
    const tokens = store.list();
    if (values['json'] === true) printJson(tokens);
    else process.stdout.write(tokens.map((t) => `${t.id} ${safeJson(t.tenant)} ${t.profile}${t.hostCaps.length ? ` ${t.hostCaps.join(',')}` : ''} ${t.created}${t.revoked ? ' revoked' : ''}\n`).join(''));
    return 0;
  } finally {
    store.close();
  }
}

function revoke(argv: string[]): number {
  const { values, positionals } = parse(argv, { json: { type: 'boolean' } });
  if (positionals.length !== 1) throw new UsageError('token revoke takes one token ID (see membrane token list)');
  const store = new TokenStore();
  try {
    const done = store.revoke(positionals[0]!);
    if (values['json'] === true) printJson({ id: positionals[0], revoked: done });
    else process.stdout.write(done ? `revoked ${positionals[0]}\n` : `no token with id ${safeJson(positionals[0])}\n`);
    return done ? 0 : 1;
  } finally {
    store.close();
  }
}

export async function tokenCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === 'create') return create(rest);
  if (sub === 'list') return list(rest);
  if (sub === 'revoke') return revoke(rest);
  throw new UsageError(sub === undefined ? 'token needs a subcommand: create, list or revoke' : `unknown token subcommand "${sub}" (create, list or revoke)`);
}
