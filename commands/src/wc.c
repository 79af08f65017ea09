/* wc [-l] [-w] [-c] [-m] [FILE]...: counts lines, words and bytes (default: all three), plus a
 * "total" line for several files.
 *
 * Column width follows GNU wc: one count for one input prints the bare number; otherwise the
 * width is the digit count of the summed sizes of the regular files, at least 7 when any
 * input is stdin. Stdin is always treated as a pipe, so `wc < file` pads like `cat file | wc`.
 * Words are maximal runs of non-whitespace bytes; -m counts bytes (no multibyte locale). */
#include <ctype.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common.h"

struct counts {
  unsigned long long lines, words, bytes;
};

static int show_lines, show_words, show_chars, show_bytes;

static int count(FILE *f, const char *name, struct counts *c) {
  static char buf[65536];
  size_t n;
  int in_word = 0;
  memset(c, 0, sizeof *c);
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    c->bytes += n;
    for (size_t i = 0; i < n; i++) {
      unsigned char ch = (unsigned char)buf[i];
      if (ch == '\n') c->lines++;
      if (isspace(ch)) {
        in_word = 0;
      } else if (!in_word) {
        in_word = 1;
        c->words++;
      }
    }
  }
  if (ferror(f)) {
    warnx("%s: %s", name, strerror(errno));
    return -1;
  }
  return 0;
}

static void print(const struct counts *c, int width, const char *name) {
  const char *sep = "";
  if (show_lines) { printf("%s%*llu", sep, width, c->lines); sep = " "; }
  if (show_words) { printf("%s%*llu", sep, width, c->words); sep = " "; }
  if (show_chars) { printf("%s%*llu", sep, width, c->bytes); sep = " "; }
  if (show_bytes) { printf("%s%*llu", sep, width, c->bytes); sep = " "; }
  if (name) printf(" %s", name);
  putchar('\n');
}

static int number_width(char **files, int nfiles) {
  unsigned long long total = 0;
  int width = 1, minimum = 1;
  for (int i = 0; i < nfiles; i++) {
    struct stat st;
    if (strcmp(files[i], "-") == 0) minimum = 7;
    else if (stat(files[i], &st) == 0) {
      if (S_ISREG(st.st_mode)) total += (unsigned long long)st.st_size;
      else minimum = 7;
    }
  }
  for (; total >= 10; total /= 10) width++;
  return width < minimum ? minimum : width;
}

int main(int argc, char **argv) {
  prog = "wc";
  int opt;
  while ((opt = getopt(argc, argv, "lwcm")) != -1) {
    switch (opt) {
      case 'l': show_lines = 1; break;
      case 'w': show_words = 1; break;
      case 'c': show_bytes = 1; break;
      case 'm': show_chars = 1; break;
      default: usage("[-lwcm] [FILE]...");
    }
  }
  if (!show_lines && !show_words && !show_chars && !show_bytes)
    show_lines = show_words = show_bytes = 1;
  static char *dash[] = {"-"};
  char **files = argv + optind;
  int nfiles = argc - optind, named = nfiles > 0;
  if (!named) { files = dash; nfiles = 1; }

  int width;
  if (nfiles == 1 && show_lines + show_words + show_chars + show_bytes == 1) width = 1;
  else width = number_width(files, nfiles);

  struct counts total = {0, 0, 0}, c;
  int status = EXIT_OK;
  for (int i = 0; i < nfiles; i++) {
    FILE *f = open_input(files[i]);
    if (!f) { status = EXIT_FAIL; continue; }
    int r = count(f, files[i], &c);
    close_input(f);
    if (r < 0) { status = EXIT_FAIL; continue; }
    total.lines += c.lines;
    total.words += c.words;
    total.bytes += c.bytes;
    print(&c, width, named ? files[i] : NULL);
  }
  if (nfiles > 1) print(&total, width, "total");
  return finish(status);
}
