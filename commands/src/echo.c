/* echo [-n] [STRING]...: writes the arguments separated by spaces, then a newline unless -n.
 * Like GNU echo, a leading argument is an option only if it is entirely made of known
 * option letters ("-n", "-nn"); anything else ("-x", "--") is printed as text. */
#include "common.h"

static int is_n_option(const char *a) {
  if (a[0] != '-' || a[1] == '\0') return 0;
  for (const char *p = a + 1; *p; p++)
    if (*p != 'n') return 0;
  return 1;
}

int main(int argc, char **argv) {
  prog = "echo";
  int i = 1, newline = 1;
  while (i < argc && is_n_option(argv[i])) {
    newline = 0;
    i++;
  }
  for (int first = i; i < argc; i++) {
    if (i > first) fputc(' ', stdout);
    fputs(argv[i], stdout);
  }
  if (newline) fputc('\n', stdout);
  return finish(EXIT_OK);
}
