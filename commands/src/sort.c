/* sort [-rnu] [FILE]...: sorts the lines of all FILEs ("-" or none: stdin) together.
 *
 * Lines compare byte-wise (the C locale; GNU sort under LC_ALL=C). -n compares a leading
 * decimal number (blanks, optional '-', digits, optional fraction; anything else is 0), with
 * ties broken byte-wise as GNU does. -r reverses. -u keeps the first of each run of equal keys
 * (with -n, numerically equal lines are equal). The whole input is held in memory. */
#include <unistd.h>
#include "common.h"

static int reverse, numeric, unique;

struct item {
  struct line l;
  size_t index;
};

static int bytes_cmp(const struct line *a, const struct line *b) {
  size_t n = a->len < b->len ? a->len : b->len;
  int c = memcmp(a->s, b->s, n);
  if (c) return c;
  return (a->len > b->len) - (a->len < b->len);
}

/* A number's digits, sign and where its integer and fraction parts lie. */
struct num {
  int neg;
  const char *ip;  /* integer digits with leading zeros removed */
  size_t ilen;
  const char *fp;  /* fraction digits with trailing zeros removed */
  size_t flen;
};

static struct num parse_num(const struct line *l) {
  struct num n = {0, "", 0, "", 0};
  const char *p = l->s, *end = l->s + l->len;
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  if (p < end && *p == '-') { n.neg = 1; p++; }
  while (p < end && *p == '0') p++;
  n.ip = p;
  while (p < end && *p >= '0' && *p <= '9') p++;
  n.ilen = (size_t)(p - n.ip);
  if (p < end && *p == '.') {
    n.fp = ++p;
    while (p < end && *p >= '0' && *p <= '9') p++;
    n.flen = (size_t)(p - n.fp);
    while (n.flen > 0 && n.fp[n.flen - 1] == '0') n.flen--;
  }
  if (n.ilen == 0 && n.flen == 0) n.neg = 0;  /* -0 == 0 */
  return n;
}

static int magnitude_cmp(const struct num *a, const struct num *b) {
  if (a->ilen != b->ilen) return a->ilen < b->ilen ? -1 : 1;
  int c = memcmp(a->ip, b->ip, a->ilen);
  if (c) return c;
  size_t n = a->flen < b->flen ? a->flen : b->flen;
  c = memcmp(a->fp, b->fp, n);
  if (c) return c;
  return (a->flen > b->flen) - (a->flen < b->flen);
}

static int numeric_cmp(const struct line *a, const struct line *b) {
  struct num x = parse_num(a), y = parse_num(b);
  if (x.neg != y.neg) return x.neg ? -1 : 1;
  int c = magnitude_cmp(&x, &y);
  return x.neg ? -c : c;
}

/* The key comparison (what -u considers equal), with -r applied. */
static int key_cmp(const struct line *a, const struct line *b) {
  int c = numeric ? numeric_cmp(a, b) : bytes_cmp(a, b);
  return reverse ? -c : c;
}

static int item_cmp(const void *pa, const void *pb) {
  const struct item *a = pa, *b = pb;
  int c = key_cmp(&a->l, &b->l);
  if (c == 0 && numeric && !unique) c = reverse ? -bytes_cmp(&a->l, &b->l) : bytes_cmp(&a->l, &b->l);
  if (c == 0) c = (a->index > b->index) - (a->index < b->index);
  return c;
}

int main(int argc, char **argv) {
  prog = "sort";
  int opt;
  while ((opt = getopt(argc, argv, "rnu")) != -1) {
    switch (opt) {
      case 'r': reverse = 1; break;
      case 'n': numeric = 1; break;
      case 'u': unique = 1; break;
      default: usage("[-rnu] [FILE]...");
    }
  }
  static char *dash[] = {"-"};
  char **files = argv + optind;
  int nfiles = argc - optind;
  if (nfiles == 0) { files = dash; nfiles = 1; }

  struct item *items = NULL;
  size_t count = 0;
  for (int i = 0; i < nfiles; i++) {
    FILE *f = open_input(files[i]);
    if (!f) return EXIT_USAGE;
    size_t len, n;
    char *buf = read_all(f, files[i], &len);
    close_input(f);
    if (!buf) return EXIT_USAGE;
    struct line *lines = split_lines(buf, len, &n);
    items = xrealloc(items, (count + n) * sizeof *items);
    for (size_t j = 0; j < n; j++, count++) {
      items[count].l = lines[j];
      items[count].index = count;
    }
    free(lines);
  }
  qsort(items, count, sizeof *items, item_cmp);
  for (size_t i = 0; i < count; i++) {
    if (unique && i > 0 && key_cmp(&items[i - 1].l, &items[i].l) == 0) continue;
    fwrite(items[i].l.s, 1, items[i].l.len, stdout);
    putchar('\n');
  }
  return finish(EXIT_OK) == EXIT_OK ? EXIT_OK : EXIT_USAGE;
}
