/* seq [-s SEP] [-w] [FIRST [INCR]] LAST: prints numbers from FIRST (default 1) by INCR
 * (default 1) while not past LAST, one per line (or separated by SEP).
 *
 * Integers print as integers. If FIRST or INCR has a fraction, every number prints with
 * as many fraction digits as the longer of the two, like GNU seq. Each value is computed as
 * FIRST + i*INCR, so long runs do not drift. -w pads with leading zeros to equal width.
 * Whole numbers within ±2^53 without -w are formatted as integers, not through printf's
 * floating-point path (long double, emulated in wasm: 3× the fuel a line). */
#include <math.h>
#include "common.h"

static int is_number(const char *s) {
  char *end;
  if (!*s) return 0;
  strtod(s, &end);
  return *end == '\0' && strpbrk(s, "xXnNiI") == NULL;
}

/* Writes V, a whole number with |V| <= 2^53 other than -0, in decimal. */
static void put_whole(double v) {
  char buf[24];
  int at = sizeof buf;
  unsigned long long u = v < 0 ? (unsigned long long)(-v) : (unsigned long long)v;
  do buf[--at] = (char)('0' + u % 10); while ((u /= 10) != 0);
  if (v < 0) buf[--at] = '-';
  fwrite(buf + at, 1, sizeof buf - (size_t)at, stdout);
}

static int fraction_digits(const char *s) {
  const char *dot = strchr(s, '.');
  if (!dot) return 0;
  int n = 0;
  for (dot++; *dot >= '0' && *dot <= '9'; dot++) n++;
  return n;
}

int main(int argc, char **argv) {
  prog = "seq";
  const char *synopsis = "[-s SEP] [-w] [FIRST [INCR]] LAST";
  const char *sep = "\n";
  int equal_width = 0, i = 1;
  while (i < argc && argv[i][0] == '-' && !is_number(argv[i])) {
    if (strcmp(argv[i], "--") == 0) { i++; break; }
    if (strcmp(argv[i], "-w") == 0) { equal_width = 1; i++; continue; }
    if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) { sep = argv[i + 1]; i += 2; continue; }
    if (strncmp(argv[i], "-s", 2) == 0 && argv[i][2]) { sep = argv[i] + 2; i++; continue; }
    warnx("invalid option '%s'", argv[i]);
    usage(synopsis);
  }
  int n = argc - i;
  if (n < 1 || n > 3) {
    warnx(n < 1 ? "missing operand" : "extra operand '%s'", argv[argc - 1]);
    usage(synopsis);
  }
  for (int j = i; j < argc; j++) {
    if (!is_number(argv[j])) {
      warnx("invalid floating point argument: '%s'", argv[j]);
      usage(synopsis);
    }
  }
  const char *first_s = n >= 2 ? argv[i] : "1";
  const char *incr_s = n == 3 ? argv[i + 1] : "1";
  const char *last_s = argv[argc - 1];
  double first = strtod(first_s, NULL), incr = strtod(incr_s, NULL), last = strtod(last_s, NULL);
  if (incr == 0) {
    warnx("invalid Zero increment value: '%s'", incr_s);
    usage(synopsis);
  }
  int prec = fraction_digits(first_s);
  if (fraction_digits(incr_s) > prec) prec = fraction_digits(incr_s);

  int width = 0;
  if (equal_width) {
    char a[64], b[64];
    width = snprintf(a, sizeof a, "%.*f", prec, first);
    int wl = snprintf(b, sizeof b, "%.*f", prec, last);
    if (wl > width) width = wl;
  }
  /* Tolerance so that 0.1-steps reach a LAST that is itself inexact in binary. */
  double eps = fabs(incr) * 1e-10;
  long long k = 0;
  for (;; k++) {
    double v = first + (double)k * incr;
    if (incr > 0 ? v > last + eps : v < last - eps) break;
    if (k > 0) fputs(sep, stdout);
    if (equal_width) printf("%0*.*f", width, prec, v);
    else if (prec == 0 && v == floor(v) && fabs(v) <= 9007199254740992.0 && !(v == 0 && signbit(v))) put_whole(v);
    else printf("%.*f", prec, v);
  }
  if (k > 0) fputs("\n", stdout);
  return finish(EXIT_OK);
}
