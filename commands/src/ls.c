/* ls [-1al] [PATH]...: lists directories (their entries sorted byte-wise) and files.
 *
 * Output is one name per line (-1 is the default since output is never a terminal). -a also
 * shows entries starting with '.', including "." and "..". -l prints
 * "TYPE+MODE LINKS SIZE YYYY-MM-DD HH:MM NAME" (UTC; "NAME -> TARGET" for symlinks). WASI
 * preview 1 carries no permission bits or owners, so MODE is a fixed "rwxr-xr-x" for
 * directories and "rw-r--r--" otherwise, and owner columns are left out. Several operands:
 * files first, then each directory under a "PATH:" header, separated by blank lines. Status,
 * as in GNU ls: 1 when a directory cannot be read, 2 when an operand does not exist. */
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "common.h"

static int show_all, long_format;

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void print_entry(const char *path, const char *name) {
  if (!long_format) { puts(name); return; }
  struct stat st;
  if (lstat(path, &st) != 0) {
    warnx("cannot access '%s': %s", path, strerror(errno));
    return;
  }
  char type = S_ISDIR(st.st_mode) ? 'd' : S_ISLNK(st.st_mode) ? 'l' : S_ISREG(st.st_mode) ? '-' : '?';
  const char *mode = S_ISDIR(st.st_mode) ? "rwxr-xr-x" : S_ISLNK(st.st_mode) ? "rwxrwxrwx" : "rw-r--r--";
  char when[32] = "?";
  time_t t = st.st_mtim.tv_sec;
  struct tm *tm = gmtime(&t);
  if (tm) strftime(when, sizeof when, "%Y-%m-%d %H:%M", tm);
  printf("%c%s %llu %lld %s %s", type, mode, (unsigned long long)st.st_nlink,
         (long long)st.st_size, when, name);
  if (S_ISLNK(st.st_mode)) {
    static char target[4096];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n >= 0) {
      target[n] = '\0';
      printf(" -> %s", target);
    }
  }
  putchar('\n');
}

static int list_dir(const char *path) {
  DIR *d = opendir(path);
  if (!d) {
    warnx("cannot open directory '%s': %s", path, strerror(errno));
    return EXIT_FAIL;
  }
  char **names = NULL;
  size_t n = 0;
  struct dirent *e;
  if (show_all) {
    names = xrealloc(names, 2 * sizeof *names);
    names[n++] = strdup(".");
    names[n++] = strdup("..");
  }
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (e->d_name[0] == '.' && !show_all) continue;
    names = xrealloc(names, (n + 1) * sizeof *names);
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, str_cmp);
  for (size_t i = 0; i < n; i++) {
    size_t plen = strlen(path);
    char *full = xmalloc(plen + strlen(names[i]) + 2);
    sprintf(full, "%s%s%s", path, plen && path[plen - 1] == '/' ? "" : "/", names[i]);
    print_entry(full, names[i]);
    free(full);
    free(names[i]);
  }
  free(names);
  return EXIT_OK;
}

int main(int argc, char **argv) {
  prog = "ls";
  int opt;
  while ((opt = getopt(argc, argv, "1al")) != -1) {
    switch (opt) {
      case '1': break;
      case 'a': show_all = 1; break;
      case 'l': long_format = 1; break;
      default: usage("[-1al] [PATH]...");
    }
  }
  static char *dot[] = {"."};
  char **paths = argv + optind;
  int npaths = argc - optind, status = EXIT_OK;
  if (npaths == 0) { paths = dot; npaths = 1; }
  qsort(paths, (size_t)npaths, sizeof *paths, str_cmp);

  char **dirs = xmalloc((size_t)npaths * sizeof *dirs);
  int ndirs = 0, nfiles = 0;
  for (int i = 0; i < npaths; i++) {
    struct stat st;
    if (stat(paths[i], &st) != 0 && lstat(paths[i], &st) != 0) {
      warnx("cannot access '%s': %s", paths[i], strerror(errno));
      status = EXIT_USAGE;  /* GNU ls: 2 for an operand it cannot reach */
    } else if (S_ISDIR(st.st_mode)) {
      dirs[ndirs++] = paths[i];
    } else {
      print_entry(paths[i], paths[i]);
      nfiles++;
    }
  }
  for (int i = 0; i < ndirs; i++) {
    if (npaths > 1) printf("%s%s:\n", (nfiles || i) ? "\n" : "", dirs[i]);
    if (list_dir(dirs[i]) != EXIT_OK && status == EXIT_OK) status = EXIT_FAIL;
  }
  return finish(status);
}
