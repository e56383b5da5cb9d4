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
    // A worker process runs file after file with the modules it has loaded: loading the
    // application again for every file was a third of the suite's CPU. Files stay apart by
    // their own database and server; a test passes settings to the app it starts through
    // startApp's env, not process.env, which a module loaded by an earlier file may have read.
    isolate: false,
  },
})
