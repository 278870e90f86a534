import { defineConfig } from 'vitest/config';

/**
 * Two tiers, each test file in exactly one:
 * - unit (`*.unit.test.ts`): runs inside the test process on pure code: no PostgreSQL, no
 *   Redis, no listening socket, no child process (unit-guard.ts fails a test that tries), so
 *   no global setup. `npm run test:unit`.
 * - integration (every other `*.test.ts`): real servers, found or started by the global setup.
 * `npm test` runs both.
 */
const UNIT = 'test/**/*.unit.test.ts';

export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    // Integration tests start real servers; a slow shared machine needs headroom, not retries.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: [UNIT], setupFiles: ['test/support/unit-guard.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [UNIT],
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
    ],
  },
});
