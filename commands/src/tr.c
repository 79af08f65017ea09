/* tr [-d] [-s] SET1 [SET2]: translates, deletes (-d) or squeezes (-s) bytes from stdin.
 *
 * Sets hold plain bytes, ranges "a-z", escapes (\n \t \r \\ \NNN octal) and the classes
 * [:lower:] [:upper:] [:digit:] [:alpha:] [:alnum:] [:space:] [:blank:] [:punct:]. When SET2
 * is shorter than SET1 its last byte is repeated. -s squeezes runs of a byte from the last set
 * given (SET2 when translating or with -d, else SET1). */
#include <ctype.h>
#include <unistd.h>
#include "common.h"

struct set {
  unsigned char b[4096];
  size_t n;
};

static void push(struct set *s, int c) {
  if (s->n < sizeof s->b) s->b[s->n++] = (unsigned char)c;
}

static int add_class(struct set *s, const char *name, size_t len) {
  static const struct { const char *name; int (*test)(int); } classes[] = {
    {"lower", islower}, {"upper", isupper}, {"digit", isdigit}, {"alpha", isalpha},
    {"alnum", isalnum}, {"space", isspace}, {"blank", isblank}, {"punct", ispunct},
  };
  for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
    if (strlen(classes[i].name) == len && memcmp(classes[i].name, name, len) == 0) {
      for (int c = 0; c < 256; c++)
        if (classes[i].test(c)) push(s, c);
      return 1;
    }
  }
  return 0;
}

/* Reads one byte of a set at *p, decoding escapes. */
static int next_byte(const char **p) {
  const char *s = *p;
  if (s[0] != '\\' || s[1] == '\0') { *p = s + 1; return (unsigned char)s[0]; }
  s++;
  int c;
  switch (*s) {
    case 'n': c = '\n'; break;
    case 't': c = '\t'; break;
    case 'r': c = '\r'; break;
    case 'a': c = '\a'; break;
    case 'b': c = '\b'; break;
    case 'f': c = '\f'; break;
    case 'v': c = '\v'; break;
    default:
      if (*s >= '0' && *s <= '7') {
        c = 0;
        for (int i = 0; i < 3 && *s >= '0' && *s <= '7'; i++) c = c * 8 + (*s++ - '0');
        *p = s;
        return c & 0xff;
      }
      c = (unsigned char)*s;
  }
  *p = s + 1;
  return c;
}

static int parse_set(const char *text, struct set *s) {
  s->n = 0;
  const char *p = text;
  while (*p) {
    if (p[0] == '[' && p[1] == ':') {
      const char *end = strstr(p + 2, ":]");
      if (end && add_class(s, p + 2, (size_t)(end - p - 2))) { p = end + 2; continue; }
      if (end) { warnx("invalid character class '%.*s'", (int)(end - p - 2), p + 2); return -1; }
    }
    int lo = next_byte(&p);
    if (p[0] == '-' && p[1] != '\0') {
      const char *q = p + 1;
      int hi = next_byte(&q);
      if (hi < lo) {
        warnx("range-endpoints of '%c-%c' are in reverse collating sequence order", lo, hi);
        return -1;
      }
      for (int c = lo; c <= hi; c++) push(s, c);
      p = q;
    } else {
      push(s, lo);
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  prog = "tr";
  const char *synopsis = "[-ds] SET1 [SET2]";
  int del = 0, squeeze = 0, opt;
  while ((opt = getopt(argc, argv, "ds")) != -1) {
    if (opt == 'd') del = 1;
    else if (opt == 's') squeeze = 1;
    else usage(synopsis);
  }
  int nsets = argc - optind;
  int need = del ? (squeeze ? 2 : 1) : (squeeze ? 1 : 2);
  if (nsets < need) { warnx("missing operand"); usage(synopsis); }
  if (nsets > 2 || (del && !squeeze && nsets > 1)) { warnx("extra operand '%s'", argv[argc - 1]); usage(synopsis); }

  struct set s1, s2 = {{0}, 0};
  if (parse_set(argv[optind], &s1) || (nsets > 1 && parse_set(argv[optind + 1], &s2))) return EXIT_FAIL;
  int translate = !del && nsets == 2;
  if (translate && s2.n == 0 && s1.n > 0) { warnx("when not truncating set1, string2 must be non-empty"); return EXIT_FAIL; }

  int map[256];
  unsigned char in_delete[256] = {0}, in_squeeze[256] = {0};
  for (int c = 0; c < 256; c++) map[c] = c;
  if (translate)
    for (size_t i = 0; i < s1.n; i++) map[s1.b[i]] = s2.b[i < s2.n ? i : s2.n - 1];
  if (del)
    for (size_t i = 0; i < s1.n; i++) in_delete[s1.b[i]] = 1;
  if (squeeze) {
    const struct set *sq = nsets == 2 ? &s2 : &s1;
    for (size_t i = 0; i < sq->n; i++) in_squeeze[sq->b[i]] = 1;
  }

  int c, last = -1;
  while ((c = getchar()) != EOF) {
    if (in_delete[c]) continue;
    c = map[c];
    if (in_squeeze[c] && c == last) continue;
    putchar(c);
    last = c;
  }
  return finish(EXIT_OK);
}
