/**
 * Attack: a type index past the module's types — in `call_indirect`, a block type or an import.
 * The fuel rewriter appends the refill's type `(i64) -> (i64)`, the twins' and the helpers' after
 * the input's types; without validation an out-of-range index would name one of them.
 */

import { refusedEverywhere } from './invalid-module.ts';

await refusedEverywhere([
  {
    attack: 'call_indirect with an out-of-range type index',
    wat: '(module (type (func)) (table 1 funcref) (func (export "f") (call_indirect (type 1) (i32.const 0))))',
    invoke: 'f',
    v8: /invalid module: .*(signature|type) index/i,
    rewriter: /type index 1 is out of range \(1 types\)/,
  },
  {
    attack: 'import with an out-of-range type index',
    // (type (func (result i32))) (import "m" "f" (func (type 1))) — as bytes: wabt would add the type
    hex: '0061736d 01000000 01050160 00017f 02070101 6d016600 01',
    invoke: 'f',
    v8: /invalid module: .*(signature|type) (index|at index) 1/i,
    rewriter: /type index 1 is out of range \(1 types\)/,
  },
]);
