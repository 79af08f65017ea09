// The build lane's one-time costs (the sysroot image, the ~100 MB rewrite of the LLVM module) are
// paid once per machine: test files that build share this cache directory instead of each paying
// them again under a fresh MEMBRANE_HOME. The test scripts run with a TMPDIR of their own
// (scripts/with-tmpdir.mjs), so they pass the machine's one in MEMBRANE_TEST_TOOLCHAIN_CACHE;
// otherwise it lives under os.tmpdir().
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

export const TOOLCHAIN_CACHE = process.env['MEMBRANE_TEST_TOOLCHAIN_CACHE'] || join(tmpdir(), `membrane-test-cache-${userInfo().uid}`);

export const HELLO_C = '#include <stdio.h>\nint main(void) {\n  printf("hello from in-sandbox clang %d\\n", 42);\n  return 0;\n}\n';
export const VECTOR_CPP =
  '#include <vector>\n#include <iostream>\nint main() {\n  std::vector<int> v{1, 2, 3};\n  int s = 0;\n  for (int x : v) s += x;\n  std::cout << "sum " << s << std::endl;\n  return 0;\n}\n';
/** A compile error at hello.c:3:5 (an undeclared identifier as a statement). */
export const BROKEN_C = '#include <stdio.h>\nint main(void) {\n    undeclared_thing;\n  return 0;\n}\n';
