/* grep [-vicnqFE] [-e PATTERN | PATTERN] [FILE]...: prints the lines that match.
 *
 * PATTERN is a POSIX basic regex (wasi-libc's <regex.h>), extended with -E, or a fixed string
 * with -F; a pattern may hold several newline-separated alternatives. -v inverts, -i ignores
 * case (ASCII for -F), -c prints counts, -n line numbers, -q prints nothing. With several
 * files each line is prefixed "NAME:". Status: 0 some line selected, 1 none, 2 error. */
#include <ctype.h>
#include <regex.h>
#include <unistd.h>
#include "common.h"

static int invert, icase, count_only, number, quiet, fixed, extended;
static regex_t *regs;
static char **fixeds;
static size_t npatterns;

static int fixed_match(const char *line, size_t len, const char *pat) {
  size_t plen = strlen(pat);
  if (plen > len) return 0;
  for (size_t i = 0; i + plen <= len; i++) {
    size_t j = 0;
    if (icase) {
      while (j < plen && tolower((unsigned char)line[i + j]) == tolower((unsigned char)pat[j])) j++;
    } else {
      while (j < plen && line[i + j] == pat[j]) j++;
    }
    if (j == plen) return 1;
  }
  return 0;
}

static int matches(char *line, size_t len) {
  for (size_t i = 0; i < npatterns; i++) {
    if (fixed ? fixed_match(line, len, fixeds[i]) : regexec(&regs[i], line, 0, NULL, 0) == 0)
      return 1;
  }
  return 0;
}

/* Returns the number of selected lines, or -1 on a read error. */
static long long grep(FILE *f, const char *name, const char *prefix) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  long long selected = 0, lineno = 0;
  while ((n = getline(&line, &cap, f)) >= 0) {
    lineno++;
    size_t len = (size_t)n;
    int had_newline = len > 0 && line[len - 1] == '\n';
    if (had_newline) line[--len] = '\0';
    if (matches(line, len) == invert) continue;
    selected++;
    if (quiet) break;
    if (count_only) continue;
    if (prefix) printf("%s:", prefix);
    if (number) printf("%lld:", lineno);
    fwrite(line, 1, len, stdout);
    putchar('\n');
  }
  free(line);
  if (ferror(f)) {
    warnx("%s: %s", name, strerror(errno));
    return -1;
  }
  if (count_only && !quiet) {
    if (prefix) printf("%s:", prefix);
    printf("%lld\n", selected);
  }
  return selected;
}

static void add_patterns(const char *text, char ***list, size_t *count) {
  char *copy = strdup(text);
  for (char *p = copy;;) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = '\0';
    *list = xrealloc(*list, (*count + 1) * sizeof **list);
    (*list)[(*count)++] = p;
    if (!nl) break;
    p = nl + 1;
  }
}

int main(int argc, char **argv) {
  prog = "grep";
  const char *synopsis = "[-vicnqFE] [-e PATTERN | PATTERN] [FILE]...";
  char **patterns = NULL;
  size_t count = 0;
  int opt;
  while ((opt = getopt(argc, argv, "vicnqFEe:")) != -1) {
    switch (opt) {
      case 'v': invert = 1; break;
      case 'i': icase = 1; break;
      case 'c': count_only = 1; break;
      case 'n': number = 1; break;
      case 'q': quiet = 1; break;
      case 'F': fixed = 1; break;
      case 'E': extended = 1; break;
      case 'e': add_patterns(optarg, &patterns, &count); break;
      default: usage(synopsis);
    }
  }
  if (count == 0) {
    if (optind >= argc) usage(synopsis);
    add_patterns(argv[optind++], &patterns, &count);
  }
  npatterns = count;
  if (fixed) {
    fixeds = patterns;
  } else {
    regs = xmalloc(count * sizeof *regs);
    int flags = REG_NOSUB | (extended ? REG_EXTENDED : 0) | (icase ? REG_ICASE : 0);
    for (size_t i = 0; i < count; i++) {
      int err = regcomp(&regs[i], patterns[i], flags);
      if (err) {
        char msg[256];
        regerror(err, &regs[i], msg, sizeof msg);
        warnx("%s", msg);
        return EXIT_USAGE;
      }
    }
  }

  static char *dash[] = {"-"};
  char **files = argv + optind;
  int nfiles = argc - optind, error = 0;
  long long total = 0;
  if (nfiles == 0) { files = dash; nfiles = 1; }
  for (int i = 0; i < nfiles; i++) {
    FILE *f = open_input(files[i]);
    if (!f) { error = 1; continue; }
    const char *label = strcmp(files[i], "-") ? files[i] : "(standard input)";
    long long n = grep(f, files[i], nfiles > 1 ? label : NULL);
    close_input(f);
    if (n < 0) error = 1;
    else total += n;
    if (quiet && total > 0) break;
  }
  int status = finish(EXIT_OK);
  if (status != EXIT_OK) return EXIT_USAGE;
  if (quiet && total > 0) return EXIT_OK;
  if (error) return EXIT_USAGE;
  return total > 0 ? EXIT_OK : EXIT_FAIL;
}
