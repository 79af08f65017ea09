/**
 * Attack: `call N` past the module's functions, a table element or an export naming one. The fuel
 * rewriter appends the threaded twins, `__membrane_fuel_refill` and the bulk helpers after the
 * input's functions; without validation an out-of-range index would land on one of them.
 */

import { refusedEverywhere } from './invalid-module.ts';

await refusedEverywhere([
  {
    attack: 'call of an out-of-range function index',
    wat: '(module (func (export "f") (call 1)))',
    invoke: 'f',
    v8: /invalid module: .*function index #?1/i,
    rewriter: /function index 1 is out of range \(1 functions\)/,
  },
  {
    attack: 'table element naming an out-of-range function',
    wat: '(module (table funcref (elem 1)) (func (export "f")))',
    invoke: 'f',
    v8: /invalid module: .*function/i,
    rewriter: /function index 1 is out of range/,
  },
]);
