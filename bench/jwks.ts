// JWKS throughput of the real server vs a bare node:http server answering the same JSON.
// Run: npx tsx bench/jwks.ts   (2-core machine: the server and the load generator share it)
import { spawn } from "node:child_process"
import { freePort } from "../src/platform/embedded-postgres.js"
import { send } from "../test/support/http.js"
import { bootstrap, load, startServer, stopChild, table, waitFor } from "./support.js"

const server = await startServer()
const { environment_id } = bootstrap(server.env)
const issuerHost = `localhost:${server.port}`
const path = `/e/${environment_id}/oauth2/jwks`
// node:http, not fetch: fetch silently drops a Host header, and the server dispatches on Host.
const fetched = await send(server.port, issuerHost, path)
if (fetched.status !== 200) throw new Error(`JWKS answered ${fetched.status}`)
const body = fetched.text

const barePort = await freePort()
const bare = spawn(process.execPath, ["-e", `
  const body = ${JSON.stringify(body)}
  require("node:http").createServer((req, res) => {
    res.writeHead(200, { "content-type": "application/json", "cache-control": "public, max-age=60", "content-length": Buffer.byteLength(body) })
    res.end(body)
  }).listen(${barePort})`], { stdio: "inherit" })
await waitFor(barePort, "x", "/")

const seconds = Number(process.env["BENCH_SECONDS"] ?? 8)
await load({ url: `http://127.0.0.1:${server.port}${path}`, host: issuerHost, seconds: 2 }) // warm-up
await load({ url: `http://127.0.0.1:${barePort}/`, host: "x", seconds: 2 })
const ours = await load({ url: `http://127.0.0.1:${server.port}${path}`, host: issuerHost, seconds })
const baseline = await load({ url: `http://127.0.0.1:${barePort}/`, host: "x", seconds })
table({ "authservice GET {issuer}/oauth2/jwks": ours, "bare node:http, same body": baseline })
console.log(`ratio (ours / bare): ${(ours.rps / baseline.rps).toFixed(2)}`)

await stopChild(bare)
await server.stop()
process.exit(0)
