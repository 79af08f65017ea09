/* WASI file I/O workload for bench/wasi-io.ts: `big DIR` writes 64 MiB in 64 KiB chunks and
 * reads it back; `small DIR` creates 1000 files of 1 KiB (open, write, close each), lists the
 * directory, stats every file and reads them all back. Prints a checksum so the work cannot be
 * optimised away. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static unsigned char buf[65536];

static unsigned sum(const unsigned char *p, size_t n, unsigned acc) {
  for (size_t i = 0; i < n; i++) acc = acc * 31 + p[i];
  return acc;
}

static int big(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/big.bin", dir);
  FILE *f = fopen(path, "wb");
  if (!f) return perror("open for write"), 1;
  for (int i = 0; i < 1024; i++) {
    memset(buf, i & 0xff, sizeof buf);
    if (fwrite(buf, 1, sizeof buf, f) != sizeof buf) return perror("write"), 1;
  }
  fclose(f);
  f = fopen(path, "rb");
  if (!f) return perror("open for read"), 1;
  unsigned acc = 0;
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) acc = sum(buf, n, acc);
  fclose(f);
  printf("big %u\n", acc);
  return 0;
}

static int small(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/small", dir);
  mkdir(path, 0755);
  memset(buf, 'x', 1024);
  for (int i = 0; i < 1000; i++) {
    snprintf(path, sizeof path, "%s/small/f%04d.txt", dir, i);
    FILE *f = fopen(path, "wb");
    if (!f) return perror("open small"), 1;
    fwrite(buf, 1, 1024, f);
    fclose(f);
  }
  snprintf(path, sizeof path, "%s/small", dir);
  DIR *d = opendir(path);
  if (!d) return perror("opendir small"), 1;
  unsigned listed = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) listed += e->d_name[0] == 'f';
  closedir(d);
  unsigned long long total = 0;
  for (int i = 0; i < 1000; i++) {
    struct stat st;
    snprintf(path, sizeof path, "%s/small/f%04d.txt", dir, i);
    if (stat(path, &st) != 0) return perror("stat small"), 1;
    total += (unsigned long long)st.st_size;
  }
  unsigned acc = 0;
  for (int i = 0; i < 1000; i++) {
    snprintf(path, sizeof path, "%s/small/f%04d.txt", dir, i);
    FILE *f = fopen(path, "rb");
    if (!f) return perror("reopen small"), 1;
    size_t n = fread(buf, 1, sizeof buf, f);
    acc = sum(buf, n, acc);
    fclose(f);
  }
  printf("small %u listed %u bytes %llu\n", acc, listed, total);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return fprintf(stderr, "usage: fileio big|small DIR\n"), 2;
  return strcmp(argv[1], "big") == 0 ? big(argv[2]) : small(argv[2]);
}
