/* Naive doubly recursive Fibonacci: almost nothing but calls, returns and one compare, the
   worst case for a per-function-entry charge. Returns fib(n) mod 2^32. */
#include <stdint.h>

__attribute__((noinline)) static uint32_t fib(uint32_t n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__attribute__((export_name("run"))) uint32_t run(int n) { return fib((uint32_t)n); }
