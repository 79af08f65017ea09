/**
 * Attack: `global.set 0` in a module that declares no globals. The fuel rewriter appends its
 * counter to the global index space, so without validation this names the counter and the
 * guest refuels itself (fuel stops being a wall, and stops being deterministic). Also through a
 * global export and a global.get in dead code, which the spec suite found.
 */

import { refusedEverywhere } from './invalid-module.ts';

await refusedEverywhere([
  {
    attack: 'global.set 0 with no globals (writes the fuel counter)',
    wat: '(module (func (export "refuel") (global.set 0 (i64.const 1000000000000))))',
    invoke: 'refuel',
    v8: /invalid module: .*global index/i,
    rewriter: /global index 0 is out of range \(0 globals\)/,
  },
  {
    attack: 'export of global 0 with no globals (exports the fuel counter)',
    wat: '(module (export "counter" (global 0)) (func (export "f")))',
    invoke: 'f',
    v8: /invalid module: .*global/i,
    rewriter: /global index 0 is out of range/,
  },
]);
