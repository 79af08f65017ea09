/**
 * Attack: `local.get 0` / `local.set 0` in a function with no parameters or locals. The fuel
 * rewriter appends the counter as a local of every metered body, so without validation the
 * guest would read its fuel (an i64) or set it.
 */

import { refusedEverywhere } from './invalid-module.ts';

await refusedEverywhere([
  {
    attack: 'local.set 0 with no locals (sets the counter local)',
    wat: '(module (func (export "f") (local.set 0 (i64.const 1000000000000))))',
    invoke: 'f',
    v8: /invalid module: .*local index/i,
    rewriter: /local index 0 is out of range \(0 locals\)/,
  },
]);
