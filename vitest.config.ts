import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
    // Integration tests start real servers; a slow shared machine needs headroom, not retries.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
