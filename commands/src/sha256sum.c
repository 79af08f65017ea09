/* sha256sum [FILE]...: prints "HASH  NAME" for each FILE ("-" or none: stdin, named "-").
 *
 * SHA-256 as specified in FIPS 180-4, written here. The round constants and initial hash
 * values are derived at start-up, exactly, by integer root search: the first 32 fraction bits
 * of the cube roots (K) and square roots (H) of the first primes. */
#include <stdint.h>
#include "common.h"

typedef unsigned __int128 u128;

static uint32_t K[64], H0[8];

/* Largest x with x^power <= v. */
static u128 iroot(u128 v, int power) {
  u128 lo = 0, hi = (u128)1 << (power == 2 ? 40 : 36);
  while (lo < hi) {
    u128 mid = (lo + hi + 1) / 2, m = mid * mid;
    if (power == 3) m *= mid;
    if (m <= v) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

static void init_constants(void) {
  int count = 0;
  for (uint32_t p = 2; count < 64; p++) {
    int prime = 1;
    for (uint32_t d = 2; d * d <= p; d++)
      if (p % d == 0) { prime = 0; break; }
    if (!prime) continue;
    K[count] = (uint32_t)iroot((u128)p << 96, 3);
    if (count < 8) H0[count] = (uint32_t)iroot((u128)p << 64, 2);
    count++;
  }
}

struct sha256 {
  uint32_t h[8];
  uint8_t block[64];
  size_t used;
  uint64_t bytes;
};

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void compress(struct sha256 *s, const uint8_t *b) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 | (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = s->h[0], b1 = s->h[1], c = s->h[2], d = s->h[3];
  uint32_t e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b1) ^ (a & c) ^ (b1 & c));
    h = g; g = f; f = e; e = d + t1;
    d = c; c = b1; b1 = a; a = t1 + t2;
  }
  s->h[0] += a; s->h[1] += b1; s->h[2] += c; s->h[3] += d;
  s->h[4] += e; s->h[5] += f; s->h[6] += g; s->h[7] += h;
}

static void sha256_init(struct sha256 *s) {
  memcpy(s->h, H0, sizeof s->h);
  s->used = 0;
  s->bytes = 0;
}

static void sha256_update(struct sha256 *s, const uint8_t *data, size_t len) {
  s->bytes += len;
  while (len > 0) {
    size_t take = 64 - s->used < len ? 64 - s->used : len;
    memcpy(s->block + s->used, data, take);
    s->used += take;
    data += take;
    len -= take;
    if (s->used == 64) { compress(s, s->block); s->used = 0; }
  }
}

static void sha256_final(struct sha256 *s, uint8_t out[32]) {
  uint64_t bits = s->bytes * 8;
  uint8_t pad = 0x80, zero = 0, len[8];
  sha256_update(s, &pad, 1);
  while (s->used != 56) sha256_update(s, &zero, 1);
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)(bits >> (56 - 8 * i));
  sha256_update(s, len, 8);
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 4; j++) out[4 * i + j] = (uint8_t)(s->h[i] >> (24 - 8 * j));
}

static int sum(const char *name) {
  FILE *f = open_input(name);
  if (!f) return -1;
  struct sha256 s;
  static uint8_t buf[65536];
  uint8_t digest[32];
  size_t n;
  sha256_init(&s);
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) sha256_update(&s, buf, n);
  int failed = ferror(f);
  close_input(f);
  if (failed) {
    warnx("%s: %s", name, strerror(errno));
    return -1;
  }
  sha256_final(&s, digest);
  for (int i = 0; i < 32; i++) printf("%02x", digest[i]);
  printf("  %s\n", name);
  return 0;
}

int main(int argc, char **argv) {
  prog = "sha256sum";
  init_constants();
  int i = 1, status = EXIT_OK;
  if (i < argc && strcmp(argv[i], "--") == 0) i++;
  else if (i < argc && argv[i][0] == '-' && argv[i][1] != '\0') {
    warnx("invalid option -- '%s'", argv[i] + 1);
    usage("[FILE]...");
  }
  if (i >= argc) return finish(sum("-") ? EXIT_FAIL : EXIT_OK);
  for (; i < argc; i++)
    if (sum(argv[i])) status = EXIT_FAIL;
  return finish(status);
}
