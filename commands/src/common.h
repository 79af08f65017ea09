/* Shared helpers for the built-in WASI commands (commands/src/).
 *
 * Each command is one C file compiled on its own for wasm32-wasi; this header is the only
 * shared code. It owns the `name: message` diagnostics on stderr, the conventional exit
 * statuses (0 ok, 1 failure, 2 usage), input opening ("-" is stdin) and whole-stream reads.
 * It does not protect against anything: the sandbox is the host's WASI, not these tools. */
#ifndef MEMBRANE_COMMANDS_COMMON_H
#define MEMBRANE_COMMANDS_COMMON_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_OK 0
#define EXIT_FAIL 1
#define EXIT_USAGE 2

static const char *prog = "";

/* Prints "prog: message\n" on stderr. */
static inline void warnx(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s: ", prog);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

/* Prints "prog: usage: prog SYNOPSIS" on stderr and exits 2. */
static inline void usage(const char *synopsis) {
  fprintf(stderr, "%s: usage: %s %s\n", prog, prog, synopsis);
  exit(EXIT_USAGE);
}

static inline void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) { warnx("out of memory"); exit(EXIT_FAIL); }
  return p;
}

static inline void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) { warnx("out of memory"); exit(EXIT_FAIL); }
  return p;
}

/* Opens NAME for reading ("-" is stdin); on failure reports "prog: NAME: strerror" and
 * returns NULL. */
static inline FILE *open_input(const char *name) {
  if (strcmp(name, "-") == 0) return stdin;
  FILE *f = fopen(name, "rb");
  if (!f) warnx("%s: %s", name, strerror(errno));
  return f;
}

static inline void close_input(FILE *f) {
  if (f && f != stdin) fclose(f);
}

/* Reads the rest of F into a malloc'd buffer (NUL-terminated, NUL not counted in *len).
 * Returns NULL on a read error, reported against NAME. */
static inline char *read_all(FILE *f, const char *name, size_t *len) {
  size_t cap = 65536, n = 0;
  char *buf = xmalloc(cap + 1);
  for (;;) {
    if (n == cap) buf = xrealloc(buf, (cap *= 2) + 1);
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    warnx("%s: %s", name, strerror(errno));
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* A line of a buffer: start and length, without its '\n'. */
struct line {
  const char *s;
  size_t len;
};

/* Splits BUF into lines; a final line without '\n' still counts. */
static inline struct line *split_lines(const char *buf, size_t len, size_t *count) {
  size_t cap = 64, n = 0, start = 0;
  struct line *v = xmalloc(cap * sizeof *v);
  for (size_t i = 0; i <= len; i++) {
    if (i == len && start == len) break;
    if (i == len || buf[i] == '\n') {
      if (n == cap) v = xrealloc(v, (cap *= 2) * sizeof *v);
      v[n].s = buf + start;
      v[n].len = i - start;
      n++;
      start = i + 1;
    }
  }
  *count = n;
  return v;
}

/* Flushes stdout and turns a write error into status 1. */
static inline int finish(int status) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    warnx("write error: %s", strerror(errno));
    return EXIT_FAIL;
  }
  return status;
}

/* Parses a non-negative decimal count; returns -1 if S is not one. */
static inline long long parse_count(const char *s) {
  if (!*s) return -1;
  long long v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return -1;
    if (v > (long long)1e17) return -1;
    v = v * 10 + (*s - '0');
  }
  return v;
}


/* The operands of cp and mv: SRC DST, or SRC... DIR. Exits with usage on too few operands;
 * returns 1 when DST is an existing directory, 0 otherwise, and -1 (after a message) when several
 * sources name a DST that is not a directory. */
static inline int destination_operands(int argc, char **argv, int first, const char *synopsis) {
  int n = argc - first;
  if (n < 2) {
    if (n == 0) warnx("missing file operand");
    else warnx("missing destination file operand after '%s'", argv[first]);
    usage(synopsis);
  }
  const char *dst = argv[argc - 1];
  struct stat st;
  int into_dir = stat(dst, &st) == 0 && S_ISDIR(st.st_mode);
  if (n > 2 && !into_dir) {
    warnx("target '%s' is not a directory", dst);
    return -1;
  }
  return into_dir;
}

#endif
