/* rm [-rf] PATH...: removes files; -r removes directories and their contents (symlinks are
 * removed, never followed); -f ignores missing operands and never fails on them. */
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common.h"

static int recursive, force;

static int remove_path(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) {
    if (force && errno == ENOENT) return 0;
    warnx("cannot remove '%s': %s", path, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) {
    if (unlink(path) == 0) return 0;
    warnx("cannot remove '%s': %s", path, strerror(errno));
    return -1;
  }
  if (!recursive) {
    warnx("cannot remove '%s': Is a directory", path);
    return -1;
  }
  DIR *d = opendir(path);
  if (!d) {
    warnx("cannot remove '%s': %s", path, strerror(errno));
    return -1;
  }
  /* Collect names first: removing while reading a directory is not portable. */
  char **names = NULL;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    names = xrealloc(names, (n + 1) * sizeof *names);
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  int status = 0;
  for (size_t i = 0; i < n; i++) {
    char *child = xmalloc(strlen(path) + strlen(names[i]) + 2);
    sprintf(child, "%s/%s", path, names[i]);
    if (remove_path(child)) status = -1;
    free(child);
    free(names[i]);
  }
  free(names);
  if (status == 0 && rmdir(path) != 0) {
    warnx("cannot remove '%s': %s", path, strerror(errno));
    status = -1;
  }
  return status;
}

int main(int argc, char **argv) {
  prog = "rm";
  int opt;
  while ((opt = getopt(argc, argv, "rRf")) != -1) {
    switch (opt) {
      case 'r': case 'R': recursive = 1; break;
      case 'f': force = 1; break;
      default: usage("[-rf] PATH...");
    }
  }
  if (optind >= argc && !force) { warnx("missing operand"); usage("[-rf] PATH..."); }
  int status = EXIT_OK;
  for (int i = optind; i < argc; i++)
    if (remove_path(argv[i])) status = EXIT_FAIL;
  return status;
}
