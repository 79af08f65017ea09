/**
 * The in-sandbox shell's parser: a small POSIX-flavoured language turned into an AST.
 *
 * Owns: tokenizing (single quotes literal; double quotes with `$` expansion and `\` escapes;
 * backslash outside quotes; `#` comments), and the grammar
 *   script   := list ( (';' | newline) list )*
 *   list     := pipeline ( ('&&' | '||') pipeline )*
 *   pipeline := command ( '|' command )*
 *   command  := (NAME=word)* word* with redirections `< word`, `> word`, `>> word` anywhere.
 * Words keep their parts (literal text, or a variable reference and whether it was quoted) so
 * expansion happens at run time, after earlier statements have set variables.
 * Invariant: the parser never executes anything and bounds its input (MAX_SCRIPT_BYTES); a script
 * it cannot read is a `ShellSyntaxError` with the offset.
 *
 * Does not protect against: nothing here runs code; the runner (run.ts) is where commands resolve
 * through the registry and run in the sandbox. Not supported, by design: globbing, field
 * splitting of unquoted expansions, command substitution, functions, control flow, background `&`.
 */

export const MAX_SCRIPT_BYTES = 64 * 1024;

export type Part = { readonly kind: 'text'; readonly text: string } | { readonly kind: 'var'; readonly name: string };
export type Word = readonly Part[];

export interface Redirect {
  readonly op: '<' | '>' | '>>';
  readonly target: Word;
}

export interface Command {
  readonly assigns: readonly { readonly name: string; readonly value: Word }[];
  readonly words: readonly Word[];
  readonly redirects: readonly Redirect[];
}

export type Pipeline = readonly Command[];

export interface AndOr {
  readonly first: Pipeline;
  readonly rest: readonly { readonly op: '&&' | '||'; readonly pipeline: Pipeline }[];
}

export type Script = readonly AndOr[];

export class ShellSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(`syntax error at ${offset}: ${message}`);
  }
}

type Token =
  | { readonly t: 'word'; readonly word: Word; readonly at: number }
  | { readonly t: 'op'; readonly op: string; readonly at: number };

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const OPERATORS = ['&&', '||', '>>', '|', ';', '<', '>', '\n'];

function tokenize(src: string): Token[] {
  if (src.length > MAX_SCRIPT_BYTES) throw new ShellSyntaxError(`script longer than ${MAX_SCRIPT_BYTES} bytes`, 0);
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\r') {
      i++;
      continue;
    }
    if (c === '#') {
      while (i < src.length && src[i] !== '\n') i++;
      continue;
    }
    const op = OPERATORS.find((o) => src.startsWith(o, i));
    if (op) {
      out.push({ t: 'op', op: op === '\n' ? ';' : op, at: i });
      i += op.length;
      continue;
    }
    if (c === '&' || c === '(' || c === ')' || c === '`') throw new ShellSyntaxError(`'${c}' is not supported`, i);
    const start = i;
    const parts: Part[] = [];
    let text = '';
    const flush = (): void => {
      if (text) parts.push({ kind: 'text', text });
      text = '';
    };
    const variable = (): void => {
      // at src[i] === '$'
      const rest = src.slice(i + 1);
      let m: RegExpMatchArray | null;
      if ((m = rest.match(/^\{([A-Za-z_][A-Za-z0-9_]*)\}/))) {
        flush();
        parts.push({ kind: 'var', name: m[1]! });
        i += 1 + m[0].length;
      } else if ((m = rest.match(/^([A-Za-z_][A-Za-z0-9_]*|\?)/))) {
        flush();
        parts.push({ kind: 'var', name: m[1]! });
        i += 1 + m[0].length;
      } else {
        text += '$';
        i++;
      }
    };
    while (i < src.length) {
      const ch = src[i]!;
      if (' \t\r#'.includes(ch) && ch !== '#') break;
      if (ch === '#' && text === '' && parts.length === 0) break;
      if (OPERATORS.some((o) => src.startsWith(o, i)) || '&()`'.includes(ch)) break;
      if (ch === "'") {
        const end = src.indexOf("'", i + 1);
        if (end < 0) throw new ShellSyntaxError('unterminated single quote', i);
        text += src.slice(i + 1, end);
        i = end + 1;
      } else if (ch === '"') {
        i++;
        for (;;) {
          if (i >= src.length) throw new ShellSyntaxError('unterminated double quote', start);
          const d = src[i]!;
          if (d === '"') {
            i++;
            break;
          }
          if (d === '\\' && i + 1 < src.length && '"\\$`'.includes(src[i + 1]!)) {
            text += src[i + 1];
            i += 2;
          } else if (d === '$') {
            variable();
          } else {
            text += d;
            i++;
          }
        }
        if (parts.length === 0 && text === '') parts.push({ kind: 'text', text: '' });
      } else if (ch === '\\') {
        if (i + 1 < src.length && src[i + 1] !== '\n') text += src[i + 1];
        i += 2;
      } else if (ch === '$') {
        variable();
      } else {
        text += ch;
        i++;
      }
    }
    flush();
    out.push({ t: 'word', word: parts, at: start });
  }
  return out;
}

/** Parse a whole script. */
export function parse(src: string): Script {
  const tokens = tokenize(src);
  let p = 0;
  const peekOp = (): string | null => {
    const t = tokens[p];
    return t && t.t === 'op' ? t.op : null;
  };
  const at = (): number => tokens[p]?.at ?? src.length;

  const command = (): Command => {
    const assigns: { name: string; value: Word }[] = [];
    const words: Word[] = [];
    const redirects: Redirect[] = [];
    for (;;) {
      const t = tokens[p];
      if (!t) break;
      if (t.t === 'op') {
        if (t.op === '<' || t.op === '>' || t.op === '>>') {
          p++;
          const target = tokens[p];
          if (!target || target.t !== 'word') throw new ShellSyntaxError(`'${t.op}' needs a file name`, at());
          redirects.push({ op: t.op, target: target.word });
          p++;
          continue;
        }
        break;
      }
      const first = t.word[0];
      const eq = words.length === 0 && first?.kind === 'text' ? first.text.indexOf('=') : -1;
      if (eq > 0 && NAME.test(first!.kind === 'text' ? first!.text.slice(0, eq) : '')) {
        const name = (first as { text: string }).text.slice(0, eq);
        const value: Part[] = [{ kind: 'text', text: (first as { text: string }).text.slice(eq + 1) }, ...t.word.slice(1)];
        assigns.push({ name, value });
      } else {
        words.push(t.word);
      }
      p++;
    }
    if (words.length === 0 && assigns.length === 0 && redirects.length === 0) throw new ShellSyntaxError('expected a command', at());
    return { assigns, words, redirects };
  };

  const pipeline = (): Pipeline => {
    const cmds = [command()];
    while (peekOp() === '|') {
      p++;
      cmds.push(command());
    }
    return cmds;
  };

  const andOr = (): AndOr => {
    const first = pipeline();
    const rest: { op: '&&' | '||'; pipeline: Pipeline }[] = [];
    for (let op = peekOp(); op === '&&' || op === '||'; op = peekOp()) {
      p++;
      while (peekOp() === ';' && tokens[p - 1]?.t === 'op') p++; // allow a newline after && / ||
      rest.push({ op, pipeline: pipeline() });
    }
    return { first, rest };
  };

  const script: AndOr[] = [];
  while (p < tokens.length) {
    if (peekOp() === ';') {
      p++;
      continue;
    }
    script.push(andOr());
    const op = peekOp();
    if (op !== null && op !== ';') throw new ShellSyntaxError(`unexpected '${op}'`, at());
  }
  return script;
}
