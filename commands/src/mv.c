/* mv SRC DST | mv SRC... DIR: renames files and directories. When DST is an existing
 * directory, each SRC moves into it under its base name. */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common.h"

static const char *base_name(const char *path) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  size_t len = strlen(buf);
  while (len > 1 && buf[len - 1] == '/') buf[--len] = '\0';
  char *slash = strrchr(buf, '/');
  return slash && slash[1] ? slash + 1 : buf;
}

int main(int argc, char **argv) {
  prog = "mv";
  const char *synopsis = "SRC DST | SRC... DIR";
  int opt;
  while ((opt = getopt(argc, argv, "")) != -1) usage(synopsis);
  int into_dir = destination_operands(argc, argv, optind, synopsis);
  if (into_dir < 0) return EXIT_FAIL;
  const char *dst = argv[argc - 1];
  int status = EXIT_OK;
  for (int i = optind; i < argc - 1; i++) {
    const char *src = argv[i];
    char *target;
    if (into_dir) {
      const char *base = base_name(src);
      size_t dlen = strlen(dst);
      target = xmalloc(dlen + strlen(base) + 2);
      sprintf(target, "%s%s%s", dst, dlen && dst[dlen - 1] == '/' ? "" : "/", base);
    } else {
      target = strdup(dst);
    }
    struct stat sst;
    if (lstat(src, &sst) != 0) {
      warnx("cannot stat '%s': %s", src, strerror(errno));
      status = EXIT_FAIL;
    } else if (rename(src, target) != 0) {
      warnx("cannot move '%s' to '%s': %s", src, target, strerror(errno));
      status = EXIT_FAIL;
    }
    free(target);
  }
  return status;
}
