import { defineConfig } from 'vitest/config';

// Tests run against the TypeScript sources; the native addon comes from build/Release.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
