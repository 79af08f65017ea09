/**
 * The names a principal is known by: tenant and instance ids. They appear in audit records,
 * database keys and HTTP paths, so they have one shape everywhere.
 * Owns: `checkName` and the id pattern (1-128 of `[A-Za-z0-9._:@-]`).
 * Invariant: a name that passed is safe in a log line, a SQL parameter and a URL path segment.
 * Does not protect against: two tenants choosing confusable names — names are the operator's.
 */

import { SandboxError } from '../errors.ts';

const ID_PATTERN = /^[A-Za-z0-9._:@-]{1,128}$/;

export function checkName(what: string, value: string): string {
  if (typeof value !== 'string' || !ID_PATTERN.test(value)) {
    throw new SandboxError('POLICY_INVALID', `${what} must be 1-128 characters of [A-Za-z0-9._:@-]`, { [what]: String(value).slice(0, 64) });
  }
  return value;
}
