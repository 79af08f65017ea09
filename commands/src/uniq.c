/* uniq [-c] [-d] [-u] [INPUT]: writes each run of identical adjacent lines once.
 * -c prefixes the run length ("%7d "), -d prints only repeated runs, -u only single lines. */
#include <unistd.h>
#include "common.h"

static int show_count, only_dup, only_single;

static void emit(const char *line, size_t len, long long n) {
  if (only_dup && n < 2) return;
  if (only_single && n > 1) return;
  if (show_count) printf("%7lld ", n);
  fwrite(line, 1, len, stdout);
  putchar('\n');
}

int main(int argc, char **argv) {
  prog = "uniq";
  int opt;
  while ((opt = getopt(argc, argv, "cdu")) != -1) {
    switch (opt) {
      case 'c': show_count = 1; break;
      case 'd': only_dup = 1; break;
      case 'u': only_single = 1; break;
      default: usage("[-cdu] [INPUT]");
    }
  }
  if (argc - optind > 1) usage("[-cdu] [INPUT]");
  const char *name = optind < argc ? argv[optind] : "-";
  FILE *f = open_input(name);
  if (!f) return EXIT_FAIL;

  char *line = NULL, *prev = NULL;
  size_t cap = 0, prev_cap = 0, prev_len = 0;
  long long run = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, f)) >= 0) {
    size_t len = (size_t)n;
    if (len > 0 && line[len - 1] == '\n') len--;
    if (run > 0 && len == prev_len && memcmp(line, prev, len) == 0) {
      run++;
      continue;
    }
    if (run > 0) emit(prev, prev_len, run);
    if (len + 1 > prev_cap) prev = xrealloc(prev, prev_cap = len + 1);
    memcpy(prev, line, len);
    prev_len = len;
    run = 1;
  }
  if (run > 0) emit(prev, prev_len, run);
  int status = EXIT_OK;
  if (ferror(f)) {
    warnx("%s: %s", name, strerror(errno));
    status = EXIT_FAIL;
  }
  close_input(f);
  return finish(status);
}
