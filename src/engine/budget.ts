/**
 * What one job may spend, and how it is stopped when it overspends: a metered guest gets a short
 * grace after its deadline to stop itself at its next fuel refill (its worker is kept); an
 * unmetered one is terminated at the deadline.
 */

import type { PolicyConfig } from '../policy/resolve.ts';
import type { PreparedModule } from './module-cache.ts';
import { INTERRUPT_GRACE_MS } from './options.ts';
import type { Budget } from './bridge/protocol.ts';

export function budgetOf(policy: PolicyConfig): Budget {
  return { ms: policy.timeoutMs, fuel: policy.fuel };
}

export function graceFor(prepared: PreparedModule): number {
  return prepared.metered ? INTERRUPT_GRACE_MS : 0;
}
