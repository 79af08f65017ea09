/** What the spec differential counts (runner.ts); the test prints it and asserts on it. */

export class Tally {
  files = 0;
  modules = 0;
  assertions = 0;
  agree = 0;
  mismatches: string[] = [];
  invalidMadeValid: string[] = [];
  /** Invalid modules the rewriter refused (INVALID_MODULE). */
  invalidRefused = 0;
  /** Invalid modules the rewriter passed through still invalid (only possible with the gate skipped). */
  invalidPassedThrough = 0;
  /** Modules the suite calls invalid or malformed that V8 accepts (V8's or wabt's divergence). */
  invalidV8Accepts: string[] = [];
  /** Malformed texts wabt refuses: no bytes exist to give the rewriter. */
  malformedText = 0;
  nanPayloadOnly = 0;
  v8Pass = 0;
  v8Fail: string[] = [];
  /** Assertions on a module that is unsupported (see `unsupported`). */
  skipped = 0;
  unsupported = new Map<string, number>();

  note(reason: string): void {
    this.unsupported.set(reason, (this.unsupported.get(reason) ?? 0) + 1);
  }
}
