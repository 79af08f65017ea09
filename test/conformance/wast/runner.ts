/**
 * The spec differential: every command of a `.wast` script runs twice in V8, once on the module
 * as given and once on `instrumentFuel` of it, and the two outcomes must agree.
 *
 * Owns: the script semantics (script commands, module registry, `spectest`) and the tally.
 * - A module the suite calls valid is compiled and instantiated on both sides (the fuel side
 *   also links `membrane:fuel.refill`, which always grants a large chunk: these scripts test
 *   semantics, not budgets); instantiation outcomes (success, link error, trap) must agree.
 * - Actions (`invoke`, `get`) and the assertions on them compare results bit for bit (a NaN whose
 *   expectation is a NaN pattern may differ in payload only), traps by V8's message, stack
 *   exhaustion and uncaught exceptions by kind. The original side is also checked against the
 *   script's expectation (the V8 baseline: its failures are V8's, reported, not mismatches).
 * - An `assert_invalid` / `assert_malformed` module with bytes V8 refuses must be refused by the
 *   rewriter (INVALID_MODULE); one it turns into a module V8 accepts is an invalid-made-valid.
 * - Modules wabt cannot encode, V8 cannot compile (memory64, GC… on this Node), or the rewriter
 *   refuses while V8 accepts them (GC type sections, 64-bit tables) are counted as unsupported
 *   with their reason, and the assertions on them as skipped: reported, never hidden.
 *
 * Does not protect against: the suite's own coverage; threads (`thread`/`wait`) and the custom
 * annotation assertions are counted unsupported.
 */

import { readFileSync } from 'node:fs';
import { SandboxError } from '../../../src/errors.ts';
import { FUEL_IMPORT_MODULE, FUEL_IMPORT_NAME, functionType, instrumentFuel, parseModule } from '../../../src/wasm/index.ts';
import type { FuncType, ParsedModule, ValType } from '../../../src/wasm/index.ts';
import { encodeModule, firstLine } from './encode.ts';
import type { Encoded, Wabt } from './encode.ts';
import { callExport, fromJs } from './invoke.ts';
import type { CallerCache } from './invoke.ts';
import { head, isAtom, isName, parseSExprs, stringAt } from './sexpr.ts';
import type { List, SExpr } from './sexpr.ts';
import { Tally } from './tally.ts';
import { Unsupported, matches, parseArg, parseExpected, sameUpToNanPayload, valueKey } from './values.ts';
import type { Expected, Value } from './values.ts';

interface Inst {
  readonly exports: WebAssembly.Exports;
}
interface Pair {
  readonly orig: Inst;
  readonly fuel: Inst;
  readonly parsed: ParsedModule;
}
type Outcome = { readonly values: Value[] } | { readonly error: string };

class Side {
  readonly registry = new Map<string, object>([['spectest', spectest()]]);
  readonly callers: CallerCache = new Map();
  constructor(readonly fuel: boolean) {}
}

function spectest(): object {
  const print = (): void => {};
  return {
    print, print_i32: print, print_i64: print, print_f32: print, print_f64: print, print_i32_f32: print, print_f64_f64: print,
    global_i32: new WebAssembly.Global({ value: 'i32' }, 666),
    global_i64: new WebAssembly.Global({ value: 'i64' }, 666n),
    global_f32: new WebAssembly.Global({ value: 'f32' }, 666.6),
    global_f64: new WebAssembly.Global({ value: 'f64' }, 666.6),
    table: new WebAssembly.Table({ element: 'anyfunc', initial: 10, maximum: 20 }),
    memory: new WebAssembly.Memory({ initial: 1, maximum: 2 }),
    shared_memory: new WebAssembly.Memory({ initial: 1, maximum: 2, shared: true }),
  };
}

const refill = (): bigint => 1n << 50n;

/** A reason with its specifics (offsets, indices, names) cut, so like reasons tally together. */
const reasonClass = (s: string): string => s.replace(/@\+\d+/g, '').replace(/#\d+/g, '#').replace(/"[^"]*"/g, '"…"').replace(/\d+/g, 'N').slice(0, 120);

function outcomeOf(e: unknown): string {
  if (e instanceof WebAssembly.LinkError) return `unlinkable:${firstLine(e)}`;
  if (e instanceof WebAssembly.RuntimeError) return `trap:${e.message}`;
  if (e instanceof RangeError && /call stack/i.test(e.message)) return 'exhaustion';
  if (typeof WebAssembly.Exception === 'function' && e instanceof WebAssembly.Exception) return 'exception';
  if (e instanceof TypeError) return `type-error:${firstLine(e)}`;
  return `error:${firstLine(e)}`;
}

const outcomeKey = (o: Outcome): string => ('error' in o ? o.error : `values:${o.values.map(valueKey).join(' ')}`);

export type { Wabt };

export class SpecRunner {
  readonly tally = new Tally();

  constructor(
    private readonly wabt: Wabt,
    /** Skip the V8 gate inside instrumentFuel (`validated: true`): the rewriter's own checks alone. */
    private readonly skipGate = false,
  ) {}

  runFile(path: string, label: string): void {
    const raw = readFileSync(path);
    const forms = parseSExprs(raw.toString('latin1'));
    this.tally.files++;
    const newlines: number[] = [];
    for (let i = raw.indexOf(10); i >= 0; i = raw.indexOf(10, i + 1)) newlines.push(i);
    const st = { orig: new Side(false), fuel: new Side(true), byName: new Map<string, Pair | null>(), current: null as Pair | null, defs: new Map<string, Encoded>() };
    for (const form of forms) {
      const where = `${label}:${lineOf(newlines, form.start)}`;
      try {
        this.command(form, raw, st, where);
      } catch (e) {
        if (e instanceof Unsupported) this.tally.note(`script: ${e.message}`);
        else this.tally.mismatches.push(`${where}: harness error: ${firstLine(e)}`);
      }
    }
  }

  private command(form: List, raw: Buffer, st: FileState, where: string): void {
    const op = head(form);
    const it = form.items;
    switch (op) {
      case 'module': {
        if (isAtom(it[1]) && it[1].text === 'instance') {
          const def = isName(it[3]) ? st.defs.get(it[3].text) : undefined;
          if (def === undefined) return void this.tally.skipped++;
          return this.instantiate(def, isName(it[2]) ? it[2].text : null, st, where, false, true);
        }
        const { enc, name, definition } = encodeModule(this.wabt, form, raw);
        if (definition) {
          this.tally.modules++;
          if (name !== null) st.defs.set(name, enc);
          return;
        }
        return this.instantiate(enc, name, st, where, false, true);
      }
      case 'register': {
        const pair = isName(it[2]) ? st.byName.get(it[2].text) : st.current;
        if (!pair) return;
        const as = stringAt(it, 1);
        st.orig.registry.set(as, pair.orig.exports);
        st.fuel.registry.set(as, pair.fuel.exports);
        return;
      }
      case 'invoke':
      case 'get':
        return this.compareAction(form, st, where, undefined);
      case 'assert_return':
        return this.compareAction(it[1] as List, st, where, it.slice(2));
      case 'assert_trap':
      case 'assert_exhaustion':
      case 'assert_exception':
        if (head(it[1]) === 'module') return this.instantiate(encodeModule(this.wabt, it[1] as List, raw).enc, null, st, where, true, false);
        return this.compareAction(it[1] as List, st, where, op);
      case 'assert_unlinkable':
      case 'assert_uninstantiable':
        return this.instantiate(encodeModule(this.wabt, it[1] as List, raw).enc, null, st, where, true, false);
      case 'assert_invalid':
      case 'assert_malformed':
        return this.checkInvalid(encodeModule(this.wabt, it[1] as List, raw).enc, where);
      default:
        throw new Unsupported(`command ${op || '?'}`);
    }
  }

  /** Instantiates a module on both sides and compares; `assertion` counts it as one. */
  private instantiate(enc: Encoded, name: string | null, st: FileState, where: string, assertion: boolean, keep: boolean): void {
    const t = this.tally;
    t.modules++;
    if (assertion) t.assertions++;
    const fail = (): void => {
      if (assertion) t.skipped++;
      if (keep) {
        st.current = null;
        if (name !== null) st.byName.set(name, null);
      }
    };
    if ('error' in enc) return fail(), t.note(`wabt cannot encode: ${reasonClass(enc.error)}`);
    const bytes = enc.bytes;
    if (!WebAssembly.validate(bytes)) {
      let reason = 'invalid';
      try {
        new WebAssembly.Module(bytes);
      } catch (e) {
        reason = firstLine(e);
      }
      return fail(), t.note(`V8 cannot compile: ${reasonClass(reason)}`);
    }
    let fuelBytes: Uint8Array<ArrayBuffer>;
    let parsed: ParsedModule;
    try {
      fuelBytes = instrumentFuel(bytes, { validated: this.skipGate }).bytes;
      parsed = parseModule(bytes);
    } catch (e) {
      if (!(e instanceof SandboxError)) throw e;
      return fail(), t.note(`rewriter refuses a module V8 compiles: ${reasonClass(e.message)}`);
    }
    let fuelModule: WebAssembly.Module;
    try {
      fuelModule = new WebAssembly.Module(fuelBytes);
    } catch (e) {
      fail();
      return void t.mismatches.push(`${where}: the instrumented module does not compile: ${firstLine(e)}`);
    }
    const a = this.instance(new WebAssembly.Module(bytes), st.orig);
    const b = this.instance(fuelModule, st.fuel);
    const ka = 'error' in a ? a.error : 'instantiated';
    const kb = 'error' in b ? b.error : 'instantiated';
    if (ka !== kb) {
      fail();
      return void t.mismatches.push(`${where}: instantiation: original ${ka}, instrumented ${kb}`);
    }
    if (assertion) t.agree++;
    if ('error' in a || 'error' in b) return fail();
    if (!keep) return;
    const pair: Pair = { orig: a, fuel: b, parsed };
    st.current = pair;
    if (name !== null) st.byName.set(name, pair);
  }

  private instance(mod: WebAssembly.Module, side: Side): Inst | { error: string } {
    const imports: Record<string, object> = {};
    for (const i of WebAssembly.Module.imports(mod)) {
      const r = side.registry.get(i.module);
      if (r !== undefined) imports[i.module] = r;
    }
    if (side.fuel) imports[FUEL_IMPORT_MODULE] = { [FUEL_IMPORT_NAME]: refill };
    try {
      return { exports: new WebAssembly.Instance(mod, imports as WebAssembly.Imports).exports };
    } catch (e) {
      return { error: outcomeOf(e) };
    }
  }

  /** Runs an action on both sides; `expect` is assert_return's results, a trap-like assertion's name, or undefined. */
  private compareAction(form: List, st: FileState, where: string, expect: SExpr[] | string | undefined): void {
    const t = this.tally;
    t.assertions++;
    const it = form.items;
    let i = 1;
    const pair = isName(it[i]) ? st.byName.get((it[i++] as { text: string }).text) : st.current;
    if (!pair) return void t.skipped++;
    const field = stringAt(it, i++);
    const args = it.slice(i).map(parseArg);
    const run = (inst: Inst, side: Side): Outcome => {
      try {
        return { values: this.act(head(form), inst, pair.parsed, field, args, side) };
      } catch (e) {
        if (e instanceof Unsupported) throw e;
        return { error: outcomeOf(e) };
      }
    };
    const a = run(pair.orig, st.orig);
    const b = run(pair.fuel, st.fuel);
    let expected: Expected[] | undefined;
    if (Array.isArray(expect)) {
      try {
        expected = expect.map(parseExpected);
      } catch (e) {
        if (!(e instanceof Unsupported)) throw e;
        t.note(`expected ${e.message} (baseline not checked)`);
      }
    }
    const ka = outcomeKey(a);
    const kb = outcomeKey(b);
    if (ka === kb) t.agree++;
    else if ('values' in a && 'values' in b && a.values.length === b.values.length && a.values.every((v, k) => valueKey(v) === valueKey(b.values[k]!) || sameUpToNanPayload(expected?.[k], v, b.values[k]!))) {
      t.agree++;
      t.nanPayloadOnly++;
    } else t.mismatches.push(`${where}: ${head(form)} "${field}": original ${ka.slice(0, 160)}, instrumented ${kb.slice(0, 160)}`);
    // The baseline: does V8 on the original meet the script's expectation?
    let pass: boolean | null = null;
    if (expected !== undefined) pass = 'values' in a && a.values.length === expected.length && expected.every((x, k) => matches(x, a.values[k]!));
    else if (expect === 'assert_trap') pass = ka.startsWith('trap:');
    else if (expect === 'assert_exhaustion') pass = ka === 'exhaustion';
    else if (expect === 'assert_exception') pass = ka === 'exception';
    if (pass === true) t.v8Pass++;
    else if (pass === false) t.v8Fail.push(`${where}: ${ka.slice(0, 120)}`);
  }

  private act(op: string, inst: Inst, parsed: ParsedModule, field: string, args: Value[], side: Side): Value[] {
    const exp = parsed.exports.find((e) => e.name === field);
    const v = inst.exports[field];
    if (op === 'get') {
      if (exp === undefined || exp.kind !== 'global') throw new TypeError(`no global export ${field}`);
      return [fromJs((v as WebAssembly.Global).value, globalType(parsed, exp.index))];
    }
    if (exp === undefined || exp.kind !== 'func' || typeof v !== 'function') throw new TypeError(`no function export ${field}`);
    const type: FuncType | undefined = functionType(parsed, exp.index);
    if (type === undefined) throw new TypeError(`export ${field} has no type`);
    return callExport(v, type, args, side.callers);
  }

  /** An assert_invalid / assert_malformed module: the rewriter must refuse what V8 refuses. */
  private checkInvalid(enc: Encoded, where: string): void {
    const t = this.tally;
    t.assertions++;
    t.modules++;
    if ('error' in enc) {
      t.malformedText++;
      t.agree++;
      return;
    }
    if (WebAssembly.validate(enc.bytes)) {
      t.invalidV8Accepts.push(where);
      t.agree++;
      return;
    }
    let out: Uint8Array<ArrayBuffer>;
    try {
      out = instrumentFuel(enc.bytes, { validated: this.skipGate }).bytes;
    } catch (e) {
      if (e instanceof SandboxError && e.code === 'INVALID_MODULE') {
        t.invalidRefused++;
        t.agree++;
        return;
      }
      return void t.mismatches.push(`${where}: the rewriter threw ${firstLine(e)} on an invalid module`);
    }
    if (WebAssembly.validate(out)) t.invalidMadeValid.push(where);
    else {
      t.invalidPassedThrough++;
      t.agree++;
    }
  }
}

type FileState = { orig: Side; fuel: Side; byName: Map<string, Pair | null>; current: Pair | null; defs: Map<string, Encoded> };

function globalType(m: ParsedModule, index: number): ValType {
  const imported = m.imports.filter((i) => i.kind === 'global');
  const g = imported[index];
  if (g !== undefined && g.kind === 'global') return g.global.valType;
  const d = m.globals[index - imported.length];
  if (d === undefined) throw new TypeError(`global ${index} out of range`);
  return d.type.valType;
}

/** The 1-based line of `offset`, by binary search over the newline offsets. */
function lineOf(newlines: readonly number[], offset: number): number {
  let lo = 0;
  let hi = newlines.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (newlines[mid]! < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo + 1;
}
