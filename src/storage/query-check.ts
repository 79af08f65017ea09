/**
 * The lexical gate in front of `vfs_query`: a tokenizer that reads SQL the way SQLite does, and
 * the rules a guest query must pass before any SQLite code sees it.
 *
 * Owns: `tokenize()` (strings '..' with '' escapes, identifiers "..", [..], `..`, blobs x'..',
 * comments -- and /* *\/, numbers, words, punctuation) and `checkQuery()`.
 *
 * Invariant: a query that passes is one statement (a trailing `;` and comments allowed) with no
 * NUL or other control character, starting with SELECT, WITH or VALUES, containing none of the
 * statement keywords that write, attach, vacuum or run a pragma (`DENIED_KEYWORDS`, as bare words),
 * and naming none of `DENIED_NAMES` nor anything starting with `pragma_` — as a word, a quoted
 * identifier or a string literal (SQLite accepts a 'string' where a table name goes). Comparison
 * is ASCII case-insensitive, as SQLite's is. This gate runs first because SQLite carries out some
 * pragmas while *preparing* them, before the child can look at the statement.
 *
 * Does not protect against: anything a read-only SELECT can do to time and memory (the child
 * process's deadline and memory watchdog bound those); SQL features that are not words (the read-
 * only connection refuses writes whatever the spelling).
 */

export type CheckResult = { ok: true } | { ok: false; code: 'DENIED' | 'INVALID' | 'TOO_LARGE'; message: string };

/** Default cap on the SQL text, in UTF-8 bytes (a guest can send no more). */
export const DEFAULT_MAX_SQL_BYTES = 64 * 1024;

/** Statement keywords a read query never needs; refused wherever they appear as bare words. */
export const DENIED_KEYWORDS: ReadonlySet<string> = new Set([
  'attach', 'detach', 'pragma', 'vacuum', 'insert', 'update', 'delete', 'create', 'drop', 'alter',
  'reindex', 'analyze', 'begin', 'commit', 'rollback', 'savepoint', 'release', 'transaction', 'into',
  'trigger', 'virtual', 'explain',
]);

/**
 * Functions and tables that reach files, native code or raw pages (most are not compiled into
 * better-sqlite3; they are refused anyway, by name, in every spelling).
 */
export const DENIED_NAMES: ReadonlySet<string> = new Set([
  'load_extension', 'fts3_tokenizer', 'readfile', 'writefile', 'edit', 'sqlite_dbpage', 'sqlite_dbdata',
  'sqlite_dbptr', 'fsdir', 'zipfile', 'zipfile_cds', 'sqlar_compress', 'sqlar_uncompress', 'lsmode',
]);

const DENIED_PREFIX = 'pragma_';
const READ_STARTS = new Set(['select', 'with', 'values']);

export type TokenKind = 'word' | 'quoted' | 'string' | 'blob' | 'number' | 'param' | 'punct';
export interface Token {
  readonly kind: TokenKind;
  /** Words as written; quoted identifiers and strings unquoted (escapes resolved). */
  readonly text: string;
}

export class TokenizeError extends Error {}

/** SQLite's rule: ASCII letters, digits, `_`, `$` and every character ≥ 0x80 make identifiers. */
function isIdChar(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x24 || c >= 0x80;
}
function isIdStart(c: number): boolean {
  return isIdChar(c) && c !== 0x24 && !(c >= 0x30 && c <= 0x39);
}
const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d;

/** ASCII-only lower case: what SQLite's case-insensitive comparison folds. */
export function asciiLower(s: string): string {
  return s.replace(/[A-Z]/g, (ch) => String.fromCharCode(ch.charCodeAt(0) + 32));
}

/** Read a quoted run starting at `i` (the opening quote); `close` doubled is an escape unless `]`. */
function quoted(sql: string, i: number, close: string, what: string): { text: string; end: number } {
  let text = '';
  let j = i + 1;
  for (;;) {
    const k = sql.indexOf(close, j);
    if (k < 0) throw new TokenizeError(`unterminated ${what}`);
    text += sql.slice(j, k);
    if (close !== ']' && sql[k + 1] === close) {
      text += close;
      j = k + 2;
      continue;
    }
    return { text, end: k + 1 };
  }
}

/** Tokens of `sql`, without whitespace and comments. Throws TokenizeError on malformed text. */
export function tokenize(sql: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < sql.length) {
    const c = sql.charCodeAt(i);
    if (isSpace(c)) {
      i++;
    } else if (c < 0x20 || c === 0x7f) {
      // SQLite stops reading at NUL; refusing every control character keeps both readers in step.
      throw new TokenizeError('control characters are not allowed in a query');
    } else if (c === 0x2d && sql[i + 1] === '-') {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? sql.length : nl + 1;
    } else if (c === 0x2f && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      if (end < 0) throw new TokenizeError('unterminated comment');
      i = end + 2;
    } else if (c === 0x27) {
      const q = quoted(sql, i, "'", 'string');
      out.push({ kind: 'string', text: q.text });
      i = q.end;
    } else if (c === 0x22 || c === 0x60 || c === 0x5b) {
      const q = quoted(sql, i, c === 0x22 ? '"' : c === 0x60 ? '`' : ']', 'identifier');
      out.push({ kind: 'quoted', text: q.text });
      i = q.end;
    } else if ((c === 0x78 || c === 0x58) && sql[i + 1] === "'") {
      const q = quoted(sql, i + 1, "'", 'blob');
      if (!/^(?:[0-9a-fA-F]{2})*$/.test(q.text)) throw new TokenizeError('malformed blob literal');
      out.push({ kind: 'blob', text: q.text });
      i = q.end;
    } else if ((c >= 0x30 && c <= 0x39) || (c === 0x2e && /[0-9]/.test(sql[i + 1] ?? ''))) {
      let j = i + 1;
      while (j < sql.length) {
        const d = sql.charCodeAt(j);
        if (isIdChar(d) || d === 0x2e) j++;
        else if ((d === 0x2b || d === 0x2d) && /[eE]/.test(sql[j - 1]!) && !/^0[xX]/.test(sql.slice(i, j))) j++;
        else break;
      }
      out.push({ kind: 'number', text: sql.slice(i, j) });
      i = j;
    } else if (isIdStart(c)) {
      let j = i + 1;
      while (j < sql.length && isIdChar(sql.charCodeAt(j))) j++;
      out.push({ kind: 'word', text: sql.slice(i, j) });
      i = j;
    } else if (c === 0x3f || c === 0x3a || c === 0x40 || c === 0x24 || c === 0x23) {
      let j = i + 1;
      while (j < sql.length && isIdChar(sql.charCodeAt(j))) j++;
      out.push({ kind: 'param', text: sql.slice(i, j) });
      i = j;
    } else {
      out.push({ kind: 'punct', text: sql[i]! });
      i++;
    }
  }
  return out;
}

function deniedName(text: string): boolean {
  const t = asciiLower(text);
  return DENIED_NAMES.has(t) || t.startsWith(DENIED_PREFIX);
}

/**
 * Whether `sql` may be sent to SQLite as a guest query. Refusals: TOO_LARGE (text over
 * `maxSqlBytes`), DENIED (a refused keyword or name), INVALID (malformed, empty, not starting with
 * SELECT/WITH/VALUES, more than one statement, parameters).
 */
export function checkQuery(sql: string, maxSqlBytes: number = DEFAULT_MAX_SQL_BYTES): CheckResult {
  if (typeof sql !== 'string') return { ok: false, code: 'INVALID', message: 'the query is not text' };
  // Cheap bound before counting bytes exactly: a UTF-16 unit is at most 3 UTF-8 bytes.
  if (sql.length > maxSqlBytes || Buffer.byteLength(sql, 'utf8') > maxSqlBytes) {
    return { ok: false, code: 'TOO_LARGE', message: `the query is longer than ${maxSqlBytes} bytes` };
  }
  let tokens: Token[];
  try {
    tokens = tokenize(sql);
  } catch (err) {
    return { ok: false, code: 'INVALID', message: err instanceof TokenizeError ? err.message : 'malformed query' };
  }
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k]!;
    if ((t.kind === 'word' || t.kind === 'quoted' || t.kind === 'string') && deniedName(t.text)) {
      return { ok: false, code: 'DENIED', message: `"${t.text.slice(0, 64)}" is not available to queries` };
    }
    if (t.kind !== 'word') continue;
    const w = asciiLower(t.text);
    // replace(x, y, z) is a string function; REPLACE as a statement needs INTO, refused below.
    const fnCall = w === 'replace' && tokens[k + 1]?.kind === 'punct' && tokens[k + 1]?.text === '(';
    if (DENIED_KEYWORDS.has(w) || (w === 'replace' && !fnCall)) {
      return { ok: false, code: 'DENIED', message: `${w.toUpperCase()} is not allowed: queries are read-only` };
    }
  }
  const semi = tokens.findIndex((t) => t.kind === 'punct' && t.text === ';');
  if (semi >= 0 && semi !== tokens.length - 1) {
    return { ok: false, code: 'INVALID', message: 'a query is exactly one statement' };
  }
  const body = semi >= 0 ? tokens.slice(0, semi) : tokens;
  const first = body[0];
  if (first === undefined) return { ok: false, code: 'INVALID', message: 'the query is empty' };
  if (first.kind !== 'word' || !READ_STARTS.has(asciiLower(first.text))) {
    return { ok: false, code: 'INVALID', message: 'a query starts with SELECT, WITH or VALUES' };
  }
  if (body.some((t) => t.kind === 'param')) {
    return { ok: false, code: 'INVALID', message: 'queries take no parameters' };
  }
  return { ok: true };
}
