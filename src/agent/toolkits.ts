/**
 * Toolkits: named groups of commands an agent definition can bring into the prompt as a compact
 * index (names only), with each command's details fetched on demand by the `describe` tool — so
 * the prompt stays short and the model asks for what it needs. Today one toolkit: `shell`, the
 * registered commands of the in-sandbox shell.
 *
 * Owns: the synopses of the built-in commands (commands/src/*.c, in short), the index text.
 * Invariant: `describe` answers from this table and the registry's names only — it runs nothing.
 *
 * Does not protect against: a synopsis drifting from its command (they are kept beside each
 * other by hand; test/agent/toolkits.test.ts checks every built-in has one).
 */

export const TOOLKITS = ['shell'] as const;

export const SHELL_SYNOPSES: Readonly<Record<string, string>> = {
  base64: 'base64 [-d] [-w COLS] [FILE]: encode FILE or stdin as base64 (wrapped at 76; -w 0 no wrap), or decode with -d',
  cat: 'cat [FILE]...: copy each FILE (or stdin) to stdout',
  cp: 'cp [-r] SRC DST | cp [-r] SRC... DIR: copy files; -r copies directories',
  echo: 'echo [-n] [STRING]...: print the arguments, then a newline unless -n',
  grep: 'grep [-vicnqFE] [-e PATTERN | PATTERN] [FILE]...: print matching lines (basic regex; -E extended, -F fixed; -v invert, -i ignore case, -c count, -n line numbers, -q quiet)',
  head: 'head [-n N] [FILE]...: the first N lines (default 10)',
  ls: 'ls [-1al] [PATH]...: list directories and files (-a hidden too, -l long)',
  mkdir: 'mkdir [-p] DIR...: create directories (-p: parents too, existing ok)',
  mv: 'mv SRC DST | mv SRC... DIR: rename or move',
  rm: 'rm [-rf] PATH...: remove files (-r directories, -f ignore missing)',
  seq: 'seq [-s SEP] [-w] [FIRST [INCR]] LAST: print numbers',
  sha256sum: 'sha256sum [FILE]...: "HASH  NAME" per file (or stdin)',
  sort: 'sort [-rnu] [FILE]...: sort lines (-r reverse, -n numeric, -u unique)',
  tail: 'tail [-n [+]N] [FILE]...: the last N lines (default 10), or from line N with +N',
  tr: 'tr [-d] [-s] SET1 [SET2]: translate, delete (-d) or squeeze (-s) bytes of stdin',
  uniq: 'uniq [-c] [-d] [-u] [INPUT]: collapse adjacent equal lines (-c count, -d only repeated, -u only unique)',
  wc: 'wc [-lwc] [FILE]...: count lines, words, bytes',
};

/** The index put in front of the system prompt. */
export function toolkitIndex(toolkits: readonly string[], commands: readonly string[]): string {
  const lines = toolkits.map((k) => (k === 'shell' ? `- shell: ${[...commands].sort().join(', ')} (run with the shell tool; describe NAME for its usage)` : `- ${k}`));
  return `Toolkits:\n${lines.join('\n')}`;
}

export function describeCommand(name: string, commands: readonly string[]): string | null {
  if (!commands.includes(name)) return null;
  return SHELL_SYNOPSES[name] ?? `${name}: a registered command (no synopsis here; try it with the shell tool)`;
}
