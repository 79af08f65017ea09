/**
 * Attack: `br 1` at the top of a function body (no such label). A threaded body is wrapped in a
 * block by the fuel rewriter and an outlined loop in three, so without validation a label past
 * the body's own would become a legal branch to a block the rewriter added.
 */

import { refusedEverywhere } from './invalid-module.ts';

await refusedEverywhere([
  {
    attack: 'br 1 at the top of a body',
    wat: '(module (func (export "f") (br 1)))',
    invoke: 'f',
    v8: /invalid module: .*branch depth/i,
    rewriter: /label index 1 is out of range \(1 labels\)/,
  },
  {
    attack: 'br_table past the body inside a loop',
    wat: '(module (func (export "f") (loop (br_table 0 3 (i32.const 0)))))',
    invoke: 'f',
    v8: /invalid module: .*(branch depth|br_table)/i,
    rewriter: /label index 3 is out of range \(2 labels\)/,
  },
]);
