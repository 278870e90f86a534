/**
 * Prints one plain closing line, `tests: N passed, N failed, N skipped`, after vitest's own
 * summary, so that tools reading the end of a CI log see the counts in a common format.
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: readonly TestModule[]): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') counts.passed++;
        else if (state === 'failed') counts.failed++;
        else counts.skipped++;
      }
      // A file that failed to load has no tests but must not read as green.
      if (module.state() === 'failed' && [...module.children.allTests()].length === 0) counts.failed++;
    }
    process.stdout.write(
      `\ntests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`,
    );
  }
}
