/* cat [FILE]...: copies each FILE ("-" or none: stdin) to stdout. A file that cannot be read
 * is reported and skipped; the status is then 1. */
#include "common.h"

static int copy(FILE *f, const char *name) {
  static char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    if (fwrite(buf, 1, n, stdout) != n) return -1;
  if (ferror(f)) {
    warnx("%s: %s", name, strerror(errno));
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  prog = "cat";
  int status = EXIT_OK, i = 1;
  if (i < argc && strcmp(argv[i], "--") == 0) i++;
  if (i >= argc) return finish(copy(stdin, "-") ? EXIT_FAIL : EXIT_OK);
  for (; i < argc; i++) {
    FILE *f = open_input(argv[i]);
    if (!f) { status = EXIT_FAIL; continue; }
    int r = copy(f, argv[i]);
    close_input(f);
    if (r < 0) break;
    if (r) status = EXIT_FAIL;
  }
  return finish(status);
}
