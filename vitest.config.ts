import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: a few files at a time, each with its own database cloned from a template.
    maxWorkers: 3,
    pool: "forks",
  },
})
