/**
 * Where a guest's uncaught exception (GUEST_EXCEPTION) was raised, as text for a person or a
 * model reading a CLI or MCP answer: Python's traceback as the lane reports it, else the innermost
 * snippet frame (` (at <snippet>:3:7 in f)`). Both are snippet-relative: the lanes keep only the
 * snippet's frames, so nothing here can name a host path.
 *
 * Does not protect against: nothing by itself; it formats what the lane already bounded.
 */

export function exceptionWhere(details: object | undefined): string {
  if (!details) return '';
  const d = details as { traceback?: unknown; stack?: unknown };
  if (typeof d.traceback === 'string' && d.traceback.length > 0) return `\n${d.traceback.trimEnd()}`;
  const top = Array.isArray(d.stack) ? (d.stack[0] as { file?: unknown; line?: unknown; column?: unknown; function?: unknown } | undefined) : undefined;
  if (!top || typeof top.file !== 'string' || typeof top.line !== 'number') return '';
  const fn = typeof top.function === 'string' && top.function ? ` in ${top.function}` : '';
  return ` (at ${top.file}:${top.line}${typeof top.column === 'number' ? `:${top.column}` : ''}${fn})`;
}
