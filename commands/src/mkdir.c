/* mkdir [-p] DIR...: creates directories. -p creates missing parents and accepts a directory
 * that already exists. */
#include <sys/stat.h>
#include <unistd.h>
#include "common.h"

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int make(const char *path, int parents) {
  if (mkdir(path, 0777) == 0) return 0;
  if (parents && errno == EEXIST && is_dir(path)) return 0;
  if (parents && errno == ENOENT) {
    char *copy = strdup(path);
    size_t len = strlen(copy);
    while (len > 1 && copy[len - 1] == '/') copy[--len] = '\0';
    char *slash = strrchr(copy, '/');
    if (slash && slash != copy) {
      *slash = '\0';
      int r = make(copy, 1);
      free(copy);
      if (r) return r;
      if (mkdir(path, 0777) == 0 || (errno == EEXIST && is_dir(path))) return 0;
    } else {
      free(copy);
    }
  }
  warnx("cannot create directory '%s': %s", path, strerror(errno));
  return -1;
}

int main(int argc, char **argv) {
  prog = "mkdir";
  int parents = 0, opt;
  while ((opt = getopt(argc, argv, "p")) != -1) {
    if (opt == 'p') parents = 1;
    else usage("[-p] DIR...");
  }
  if (optind >= argc) { warnx("missing operand"); usage("[-p] DIR..."); }
  int status = EXIT_OK;
  for (int i = optind; i < argc; i++)
    if (make(argv[i], parents)) status = EXIT_FAIL;
  return status;
}
