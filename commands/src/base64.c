/* base64 [-d] [-w COLS] [FILE]: encodes FILE ("-" or none: stdin) as base64 (RFC 4648),
 * wrapping lines at 76 columns (-w 0: no wrapping), or decodes it with -d. Decoding ignores
 * newlines; any other byte outside the alphabet, or bad padding, is "invalid input" (1). */
#include <unistd.h>
#include "common.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void encode(const unsigned char *in, size_t len, long long wrap) {
  long long col = 0;
  for (size_t i = 0; i < len; i += 3) {
    unsigned v = (unsigned)in[i] << 16;
    if (i + 1 < len) v |= (unsigned)in[i + 1] << 8;
    if (i + 2 < len) v |= in[i + 2];
    char out[4] = {alphabet[v >> 18 & 63], alphabet[v >> 12 & 63],
                   i + 1 < len ? alphabet[v >> 6 & 63] : '=', i + 2 < len ? alphabet[v & 63] : '='};
    for (int j = 0; j < 4; j++) {
      putchar(out[j]);
      if (wrap > 0 && ++col == wrap) { putchar('\n'); col = 0; }
    }
  }
  if (col > 0) putchar('\n');
}

static int decode(const unsigned char *in, size_t len) {
  int value[256];
  for (int i = 0; i < 256; i++) value[i] = -1;
  for (int i = 0; i < 64; i++) value[(unsigned char)alphabet[i]] = i;
  unsigned acc = 0;
  int nbits = 0, pads = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = in[i];
    if (c == '\n' || c == '\r') continue;
    if (c == '=') { pads++; continue; }
    if (value[c] < 0 || pads > 0) return -1;
    acc = (acc << 6) | (unsigned)value[c];
    nbits += 6;
    if (nbits >= 8) {
      nbits -= 8;
      putchar((int)(acc >> nbits) & 0xff);
    }
  }
  /* Leftover bits must be the zero-padding of a final 2- or 3-byte group, matched by '='. */
  if (pads > 2 || (nbits == 0 ? pads != 0 : (nbits / 2 != pads))) return -1;
  return 0;
}

int main(int argc, char **argv) {
  prog = "base64";
  const char *synopsis = "[-d] [-w COLS] [FILE]";
  int decoding = 0, opt;
  long long wrap = 76;
  while ((opt = getopt(argc, argv, "dw:")) != -1) {
    if (opt == 'd') decoding = 1;
    else if (opt == 'w' && (wrap = parse_count(optarg)) >= 0) continue;
    else {
      if (opt == 'w') warnx("invalid wrap size: '%s'", optarg);
      usage(synopsis);
    }
  }
  if (argc - optind > 1) { warnx("extra operand '%s'", argv[optind + 1]); usage(synopsis); }
  const char *name = optind < argc ? argv[optind] : "-";
  FILE *f = open_input(name);
  if (!f) return EXIT_FAIL;
  size_t len;
  char *buf = read_all(f, name, &len);
  close_input(f);
  if (!buf) return EXIT_FAIL;
  int status = EXIT_OK;
  if (!decoding) encode((unsigned char *)buf, len, wrap);
  else if (decode((unsigned char *)buf, len)) {
    warnx("invalid input");
    status = EXIT_FAIL;
  }
  free(buf);
  return finish(status);
}
