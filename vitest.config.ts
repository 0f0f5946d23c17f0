import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
    // Removes the temporary directories the test helpers made, once each file's own hooks have run.
    setupFiles: ['test/helpers/file-end.ts'],
  },
});
