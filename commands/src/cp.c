/* cp [-r] SRC DST | cp [-r] SRC... DIR: copies files; -r copies directories recursively.
 * When DST is an existing directory, each SRC is copied into it under its base name.
 * Symlinks met during -r are recreated as symlinks, never followed. Modes are not copied
 * (WASI preview 1 has none). */
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common.h"

static int recursive;

static char *join_path(const char *dir, const char *name) {
  size_t dlen = strlen(dir);
  char *p = xmalloc(dlen + strlen(name) + 2);
  sprintf(p, "%s%s%s", dir, dlen && dir[dlen - 1] == '/' ? "" : "/", name);
  return p;
}

static const char *base_name(const char *path) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  size_t len = strlen(buf);
  while (len > 1 && buf[len - 1] == '/') buf[--len] = '\0';
  char *slash = strrchr(buf, '/');
  return slash && slash[1] ? slash + 1 : buf;
}

static int copy_file(const char *src, const char *dst) {
  FILE *in = fopen(src, "rb");
  if (!in) { warnx("cannot open '%s' for reading: %s", src, strerror(errno)); return -1; }
  FILE *out = fopen(dst, "wb");
  if (!out) {
    warnx("cannot create regular file '%s': %s", dst, strerror(errno));
    fclose(in);
    return -1;
  }
  static char buf[65536];
  size_t n;
  int status = 0;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
    if (fwrite(buf, 1, n, out) != n) break;
  }
  if (ferror(in)) { warnx("error reading '%s': %s", src, strerror(errno)); status = -1; }
  if (fclose(out) != 0 || status) {
    if (!status) warnx("error writing '%s': %s", dst, strerror(errno));
    status = -1;
  }
  fclose(in);
  return status;
}

static int copy_path(const char *src, const char *dst) {
  struct stat st;
  if (lstat(src, &st) != 0) {
    warnx("cannot stat '%s': %s", src, strerror(errno));
    return -1;
  }
  if (S_ISLNK(st.st_mode) && recursive) {
    static char target[4096];
    ssize_t n = readlink(src, target, sizeof target - 1);
    if (n < 0) { warnx("cannot read symbolic link '%s': %s", src, strerror(errno)); return -1; }
    target[n] = '\0';
    if (symlink(target, dst) != 0) {
      warnx("cannot create symbolic link '%s': %s", dst, strerror(errno));
      return -1;
    }
    return 0;
  }
  if (S_ISLNK(st.st_mode) && stat(src, &st) != 0) {
    warnx("cannot stat '%s': %s", src, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) return copy_file(src, dst);
  if (!recursive) {
    warnx("-r not specified; omitting directory '%s'", src);
    return -1;
  }
  struct stat dst_st;
  if (mkdir(dst, 0777) != 0 && !(errno == EEXIST && stat(dst, &dst_st) == 0 && S_ISDIR(dst_st.st_mode))) {
    warnx("cannot create directory '%s': %s", dst, strerror(errno));
    return -1;
  }
  DIR *d = opendir(src);
  if (!d) { warnx("cannot open directory '%s': %s", src, strerror(errno)); return -1; }
  int status = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char *s = join_path(src, e->d_name), *t = join_path(dst, e->d_name);
    if (copy_path(s, t)) status = -1;
    free(s);
    free(t);
  }
  closedir(d);
  return status;
}

int main(int argc, char **argv) {
  prog = "cp";
  const char *synopsis = "[-r] SRC DST | SRC... DIR";
  int opt;
  while ((opt = getopt(argc, argv, "rR")) != -1) {
    if (opt == 'r' || opt == 'R') recursive = 1;
    else usage(synopsis);
  }
  int into_dir = destination_operands(argc, argv, optind, synopsis);
  if (into_dir < 0) return EXIT_FAIL;
  const char *dst = argv[argc - 1];
  int status = EXIT_OK;
  for (int i = optind; i < argc - 1; i++) {
    char *target = into_dir ? join_path(dst, base_name(argv[i])) : strdup(dst);
    if (copy_path(argv[i], target)) status = EXIT_FAIL;
    free(target);
  }
  return status;
}
