/* tail [-n [+]N] [FILE]...: prints the last N lines (default 10) of each FILE ("-" or none:
 * stdin), or with "+N" everything from line N on. Several files get "==> NAME <==" headers.
 * The historical form "-N" is accepted as "-n N". The input is held in memory. */
#include <unistd.h>
#include "common.h"

static int tail(FILE *f, const char *name, long long n, int from_start) {
  size_t len;
  char *buf = read_all(f, name, &len);
  if (!buf) return -1;
  size_t start = 0;
  if (from_start) {
    for (long long line = 1; line < n && start < len; start++)
      if (buf[start] == '\n') line++;
  } else {
    size_t i = len;
    if (i > 0 && buf[i - 1] == '\n') i--;  /* a final newline ends the last line */
    long long seen = 0;
    while (i > 0) {
      if (buf[i - 1] == '\n' && ++seen == n) break;
      i--;
    }
    start = n == 0 ? len : i;
  }
  fwrite(buf + start, 1, len - start, stdout);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  prog = "tail";
  long long n = 10;
  int from_start = 0;
  char nbuf[32];
  if (argc > 1 && argv[1][0] == '-' && parse_count(argv[1] + 1) >= 0 && strlen(argv[1]) < 20) {
    snprintf(nbuf, sizeof nbuf, "-n%s", argv[1] + 1);
    argv[1] = nbuf;
  }
  int opt;
  while ((opt = getopt(argc, argv, "n:")) != -1) {
    if (opt != 'n') usage("[-n [+]N] [FILE]...");
    const char *v = optarg;
    from_start = v[0] == '+';
    if (v[0] == '+' || v[0] == '-') v++;
    if ((n = parse_count(v)) < 0) {
      warnx("invalid number of lines: '%s'", optarg);
      usage("[-n [+]N] [FILE]...");
    }
  }
  static char *dash[] = {"-"};
  char **files = argv + optind;
  int nfiles = argc - optind, status = EXIT_OK;
  if (nfiles == 0) { files = dash; nfiles = 1; }
  for (int i = 0; i < nfiles; i++) {
    FILE *f = open_input(files[i]);
    if (!f) { status = EXIT_FAIL; continue; }
    if (nfiles > 1) printf("%s==> %s <==\n", i ? "\n" : "", strcmp(files[i], "-") ? files[i] : "standard input");
    if (tail(f, files[i], n, from_start)) status = EXIT_FAIL;
    close_input(f);
  }
  return finish(status);
}
