/**
 * The s-expression layer of the `.wast` script format: tokens, lists, string literals, comments.
 *
 * Owns: turning a script's bytes into a tree whose nodes remember their byte span, so a module's
 * text can be handed to wabt exactly as written. The source is read as latin1, one character per
 * byte, so string literals holding raw non-UTF-8 bytes survive and spans are byte offsets.
 *
 * Does not protect against: anything beyond the surface syntax; what a form means is script.ts's
 * business, and malformed input throws a plain Error naming the offset (a test-harness failure).
 */

export interface Atom {
  readonly kind: 'atom';
  /** The token as written (a string literal keeps its quotes and escapes). */
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

export interface List {
  readonly kind: 'list';
  readonly items: SExpr[];
  readonly start: number;
  readonly end: number;
}

export type SExpr = Atom | List;

/** Parses every top-level form of `src` (a latin1 string: one char per byte). */
export function parseSExprs(src: string): List[] {
  const top: List[] = [];
  const stack: { items: SExpr[]; start: number }[] = [];
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) {
      i++;
    } else if (c === 0x3b && src.charCodeAt(i + 1) === 0x3b) {
      const nl = src.indexOf('\n', i);
      i = nl < 0 ? n : nl + 1;
    } else if (c === 0x28 && src.charCodeAt(i + 1) === 0x3b) {
      i = skipBlockComment(src, i);
    } else if (c === 0x28) {
      stack.push({ items: [], start: i });
      i++;
    } else if (c === 0x29) {
      const open = stack.pop();
      if (open === undefined) throw new Error(`wast: unbalanced ')' at ${i}`);
      const list: List = { kind: 'list', items: open.items, start: open.start, end: i + 1 };
      if (stack.length === 0) top.push(list);
      else stack[stack.length - 1]!.items.push(list);
      i++;
    } else {
      const start = i;
      if (c === 0x22) i = skipString(src, i);
      else {
        while (i < n && !isDelimiter(src.charCodeAt(i))) i++;
        if (i === start) i++; // a lone ';' is a token of its own
      }
      const atom: Atom = { kind: 'atom', text: src.slice(start, i), start, end: i };
      if (stack.length === 0) throw new Error(`wast: atom outside a form at ${start}`);
      stack[stack.length - 1]!.items.push(atom);
    }
  }
  if (stack.length > 0) throw new Error(`wast: unclosed '(' at ${stack[stack.length - 1]!.start}`);
  return top;
}

function isDelimiter(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x28 || c === 0x29 || c === 0x22 || c === 0x3b;
}

function skipBlockComment(src: string, i: number): number {
  let depth = 0;
  while (i < src.length) {
    if (src.startsWith('(;', i)) {
      depth++;
      i += 2;
    } else if (src.startsWith(';)', i)) {
      depth--;
      i += 2;
      if (depth === 0) return i;
    } else i++;
  }
  throw new Error('wast: unclosed block comment');
}

function skipString(src: string, i: number): number {
  i++;
  while (i < src.length) {
    const c = src.charCodeAt(i);
    if (c === 0x5c) i += 2;
    else if (c === 0x22) return i + 1;
    else i++;
  }
  throw new Error('wast: unclosed string');
}

export const isAtom = (e: SExpr | undefined): e is Atom => e !== undefined && e.kind === 'atom';
export const isList = (e: SExpr | undefined): e is List => e !== undefined && e.kind === 'list';
export const isString = (e: SExpr | undefined): e is Atom => isAtom(e) && e.text.startsWith('"');
export const isName = (e: SExpr | undefined): e is Atom => isAtom(e) && e.text.startsWith('$');
/** The head keyword of a list (`module`, `assert_return`, `i32.const`…), or ''. */
export const head = (e: SExpr | undefined): string => (isList(e) && isAtom(e.items[0]) ? e.items[0].text : '');

/** The bytes of a string literal (escapes: \t \n \r \" \' \\ \hh \u{h+}; other chars as bytes). */
export function stringBytes(a: Atom): Uint8Array {
  const s = a.text;
  const out: number[] = [];
  for (let i = 1; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c !== 0x5c) {
      out.push(c);
      continue;
    }
    const e = s[++i]!;
    if (e === 't') out.push(9);
    else if (e === 'n') out.push(10);
    else if (e === 'r') out.push(13);
    else if (e === '"' || e === "'" || e === '\\') out.push(e.charCodeAt(0));
    else if (e === 'u') {
      const close = s.indexOf('}', i);
      const cp = parseInt(s.slice(i + 2, close), 16);
      out.push(...new TextEncoder().encode(String.fromCodePoint(cp)));
      i = close;
    } else {
      out.push(parseInt(s.slice(i, i + 2), 16));
      i++;
    }
  }
  return Uint8Array.from(out);
}

/** A string literal as text (names of exports and registered modules are UTF-8). */
export function stringText(a: Atom): string {
  return new TextDecoder().decode(stringBytes(a));
}

/** The string literal at `items[i]` as text; anything else is a malformed script. */
export function stringAt(items: readonly SExpr[], i: number): string {
  const a = items[i];
  if (!isString(a)) throw new Error(`wast: expected a string at ${a?.start ?? '?'}`);
  return stringText(a);
}
