/* Quicksort (median of three, insertion sort below 16 elements) of 64 Ki pseudo-random ints,
   `reps` times with fresh data: branchy, recursive, memory-bound. Returns a checksum of the
   sorted arrays. */
#include <stdint.h>

#define COUNT 65536

static int32_t data[COUNT];

static void insertion(int32_t *a, int n) {
  for (int i = 1; i < n; i++) {
    int32_t v = a[i];
    int j = i - 1;
    while (j >= 0 && a[j] > v) { a[j + 1] = a[j]; j--; }
    a[j + 1] = v;
  }
}

static inline void swap(int32_t *a, int i, int j) { int32_t t = a[i]; a[i] = a[j]; a[j] = t; }

static void quicksort(int32_t *a, int n) {
  while (n > 16) {
    int m = n / 2;
    if (a[m] < a[0]) swap(a, m, 0);
    if (a[n - 1] < a[0]) swap(a, n - 1, 0);
    if (a[n - 1] < a[m]) swap(a, n - 1, m);
    int32_t pivot = a[m];
    int i = 0, j = n - 1;
    for (;;) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i >= j) break;
      swap(a, i, j);
      i++; j--;
    }
    /* Recurse on the smaller side, loop on the larger: bounded stack. */
    if (j + 1 < n - j - 1) { quicksort(a, j + 1); a += j + 1; n -= j + 1; }
    else { quicksort(a + j + 1, n - j - 1); n = j + 1; }
  }
  insertion(a, n);
}

__attribute__((export_name("run"))) uint32_t run(int reps) {
  uint32_t x = 2463534242u, sum = 0;
  for (int r = 0; r < reps; r++) {
    for (int i = 0; i < COUNT; i++) { x ^= x << 13; x ^= x >> 17; x ^= x << 5; data[i] = (int32_t)(x >> 1); }
    quicksort(data, COUNT);
    for (int i = 0; i < COUNT; i += 97) sum = sum * 31 + (uint32_t)data[i];
  }
  return sum;
}
