/* head [-n N] [FILE]...: prints the first N lines (default 10) of each FILE ("-" or none:
 * stdin). With several files each is preceded by "==> NAME <==", separated by a blank line.
 * The historical form "-N" is accepted as "-n N". */
#include <unistd.h>
#include "common.h"

static int head(FILE *f, const char *name, long long n) {
  int ch;
  while (n > 0 && (ch = getc(f)) != EOF) {
    putchar(ch);
    if (ch == '\n') n--;
  }
  if (ferror(f)) {
    warnx("%s: %s", name, strerror(errno));
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  prog = "head";
  long long n = 10;
  char nbuf[32];
  if (argc > 1 && argv[1][0] == '-' && parse_count(argv[1] + 1) >= 0 && strlen(argv[1]) < 20) {
    snprintf(nbuf, sizeof nbuf, "-n%s", argv[1] + 1);
    argv[1] = nbuf;
  }
  int opt;
  while ((opt = getopt(argc, argv, "n:")) != -1) {
    if (opt != 'n' || (n = parse_count(optarg)) < 0) {
      if (opt == 'n') warnx("invalid number of lines: '%s'", optarg);
      usage("[-n N] [FILE]...");
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
    if (head(f, files[i], n)) status = EXIT_FAIL;
    close_input(f);
  }
  return finish(status);
}
