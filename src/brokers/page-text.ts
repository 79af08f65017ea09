/**
 * A fetched page → its readable text, for `browse_fetch`. Written by hand on purpose: the input
 * is hostile, the output only needs to be plain text for a model to read, and a linear scan with
 * no DOM, no script and no network access is the smallest thing that cannot be tricked into
 * doing more than stripping markup.
 *
 * Owns: dropping script/style/template/noscript/svg content and comments, turning block
 * elements into line breaks, decoding character references, collapsing whitespace, and the
 * header (title, final URL, status). Invariant: the output is a pure function of the bytes, at
 * most as long as the input plus the header; nothing is executed or fetched; every step is
 * linear in the input (no regular expression here can backtrack across the page: element
 * bodies are found with indexOf, tags are `<[^<>]*>`), so a hostile page cannot stall the host.
 *
 * Does not protect against: text that is itself adversarial (prompt injection) — it is the
 * page's text, delivered as data.
 */

const lossy = new TextDecoder('utf-8', { fatal: false });

const DROP_OPEN = /<(script|style|template|noscript|svg|head|iframe|object)\b/gi;
const BLOCK = /<\/?(p|div|br|li|ul|ol|h[1-6]|tr|table|section|article|header|footer|nav|main|aside|blockquote|pre|hr|dd|dt|dl|figure|figcaption|form|fieldset|details|summary)\b[^<>]*>/gi;
const NAMED: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', mdash: '—', ndash: '–', hellip: '…', copy: '©', reg: '®', laquo: '«', raquo: '»', rsquo: '’', lsquo: '‘', rdquo: '”', ldquo: '“' };

export function pageText(body: Uint8Array, contentType: string, status: number, url: string): string {
  const raw = lossy.decode(body);
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  const header = (title: string): string => `${title ? `Title: ${oneLine(title)}\n` : ''}URL: ${url}\nStatus: ${status}\n\n`;
  if (type === 'text/plain' || type === 'text/markdown' || type === 'application/json') return header('') + raw;
  if (type !== '' && type !== 'text/html' && type !== 'application/xhtml+xml') return `${header('')}[${type} content is not text]\n`;
  const title = titleOf(raw);
  const text = dropElements(dropComments(raw))
    .replace(BLOCK, '\n')
    .replace(/<[^<>]*>/g, ' ')
    .replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,8});/gi, (m, ref: string) => decodeRef(ref) ?? m)
    .split('\n')
    .map((l) => l.replace(/[ \t\f\v\r\u00a0]+/g, ' ').trim())
    .filter((l, i, all) => l !== '' || (i > 0 && all[i - 1] !== ''))
    .join('\n')
    .trim();
  return `${header(decodeAll(title))}${text}\n`;
}

/** Remove `<!-- … -->` (an unterminated comment runs to the end), by indexOf. */
function dropComments(s: string): string {
  let out = '';
  let at = 0;
  for (;;) {
    const open = s.indexOf('<!--', at);
    if (open < 0) return out + s.slice(at);
    out += `${s.slice(at, open)} `;
    const close = s.indexOf('-->', open + 4);
    if (close < 0) return out;
    at = close + 3;
  }
}

/** Remove script/style/… elements with their content (an unclosed one runs to the end). */
function dropElements(s: string): string {
  const lower = s.toLowerCase();
  let out = '';
  let at = 0;
  DROP_OPEN.lastIndex = 0;
  for (;;) {
    DROP_OPEN.lastIndex = at;
    const m = DROP_OPEN.exec(s);
    if (!m) return out + s.slice(at);
    out += `${s.slice(at, m.index)} `;
    const close = lower.indexOf(`</${m[1]!.toLowerCase()}`, m.index + m[0].length);
    if (close < 0) return out;
    const end = s.indexOf('>', close);
    if (end < 0) return out;
    at = end + 1;
  }
}

function titleOf(s: string): string {
  const lower = s.toLowerCase();
  const open = lower.indexOf('<title');
  if (open < 0) return '';
  const start = s.indexOf('>', open);
  if (start < 0) return '';
  const close = lower.indexOf('</title', start);
  return s.slice(start + 1, close < 0 ? Math.min(s.length, start + 1 + 1000) : close);
}

function decodeRef(ref: string): string | null {
  if (ref[0] === '#') {
    const n = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
    return Number.isFinite(n) && n > 0 && n <= 0x10ffff && (n < 0xd800 || n > 0xdfff) ? String.fromCodePoint(n) : null;
  }
  return NAMED[ref.toLowerCase()] ?? null;
}

function decodeAll(s: string): string {
  return s.replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,8});/gi, (m, ref: string) => decodeRef(ref) ?? m);
}

function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim().slice(0, 300);
}
