/* Dense double-precision matrix multiply, C = A × B (N×N, i-k-j order), `reps` times; each
   result feeds the next A so the products cannot be hoisted. Returns a checksum of C. */
#define N 128

static double A[N][N], B[N][N], C[N][N];

__attribute__((export_name("run"))) double run(int reps) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      A[i][j] = (double)((i * 7 + j * 3) % 17) / 17.0;
      B[i][j] = (double)((i * 5 + j * 11) % 13) / 13.0 - 0.5;
    }
  for (int r = 0; r < reps; r++) {
    for (int i = 0; i < N; i++) {
      double a0 = A[i][0];
      for (int j = 0; j < N; j++) C[i][j] = a0 * B[0][j];
      for (int k = 1; k < N; k++) {
        double a = A[i][k];
        for (int j = 0; j < N; j++) C[i][j] += a * B[k][j];
      }
    }
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) A[i][j] = C[i][j] * (1.0 / N) + 0.25;
  }
  double s = 0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) s += C[i][j] * (double)(i + 2 * j + 1);
  return s;
}
