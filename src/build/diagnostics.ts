/**
 * Compiler and linker diagnostics as data: clang's `file:line:col: severity: message` lines and
 * wasm-ld's `wasm-ld: severity: message` lines, parsed from a build's stderr.
 *
 * Owns: the `Diagnostic` shape and its bounds (at most MAX_DIAGNOSTICS entries, each message at
 * most MAX_MESSAGE_CHARS). Invariant: only guest paths appear — the text is what tools inside the
 * sandbox printed, and they never saw a host path (sources live at `/`, the sysroot at /sysroot).
 *
 * Does not protect against: a source file whose own text looks like a diagnostic line (it is
 * reported as one; the caller's own source is the only input to the compiler).
 */

export interface Diagnostic {
  /** The guest path as the tool printed it (`hello.c`, `/sysroot/include/...`); absent for the linker. */
  readonly file?: string;
  readonly line?: number;
  readonly column?: number;
  readonly severity: 'error' | 'warning' | 'note' | 'remark';
  readonly message: string;
  /** Which tool reported it. */
  readonly tool: 'clang' | 'wasm-ld';
}

export const MAX_DIAGNOSTICS = 200;
export const MAX_MESSAGE_CHARS = 2_000;

const CLANG = /^(.{1,4096}?):(\d{1,9}):(\d{1,9}): (fatal error|error|warning|note|remark): (.*)$/;
const CLANG_NO_POS = /^(?:clang(?:\+\+)?|error): (error|warning|note): (.*)$/;
const LINKER = /^wasm-ld: (error|warning): (.*)$/;

const clip = (s: string): string => (s.length > MAX_MESSAGE_CHARS ? `${s.slice(0, MAX_MESSAGE_CHARS - 1)}…` : s);

export function parseDiagnostics(stderr: string, into: Diagnostic[] = []): Diagnostic[] {
  for (const line of stderr.split('\n')) {
    if (into.length >= MAX_DIAGNOSTICS) break;
    let m = CLANG.exec(line);
    if (m) {
      const severity = m[4] === 'fatal error' ? 'error' : (m[4] as Diagnostic['severity']);
      into.push({ file: m[1]!, line: Number(m[2]), column: Number(m[3]), severity, message: clip(m[5]!), tool: 'clang' });
      continue;
    }
    m = LINKER.exec(line);
    if (m) {
      into.push({ severity: m[1] as 'error' | 'warning', message: clip(m[2]!), tool: 'wasm-ld' });
      continue;
    }
    m = CLANG_NO_POS.exec(line);
    if (m) into.push({ severity: m[1] as 'error' | 'warning' | 'note', message: clip(m[2]!), tool: 'clang' });
  }
  return into;
}
