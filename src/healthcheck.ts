import { request } from "node:http"
import { parseConfig } from "./platform/config.js"

/**
 * The container's HEALTHCHECK (`node dist/healthcheck.js`): GET /readyz of this container's own
 * server, exit 0 when it answers 200, else 1 with one line. Sent to the listener's address with
 * the Management host as Host, so it works whichever hosts the probes answer on; it reads the same
 * environment as the server, so PORT, HOST and MANAGEMENT_HOST need no second copy.
 */
const fail = (line: string): never => {
  process.stderr.write(`authservice healthcheck: ${line}\n`)
  process.exit(1)
}

let config: ReturnType<typeof parseConfig>
try {
  config = parseConfig(process.env)
} catch (e) {
  fail(e instanceof Error ? e.message : String(e))
}
const listen = config!.listenHost
const host = listen === undefined || listen === "0.0.0.0" || listen === "::" ? "127.0.0.1" : listen
const req = request(
  { host, port: config!.port, path: "/readyz", headers: { host: config!.managementHost }, timeout: 4000 },
  (res) => {
    res.resume()
    if (res.statusCode === 200) process.exit(0)
    fail(`/readyz answered ${res.statusCode}`)
  },
)
req.on("timeout", () => req.destroy(new Error("no answer within 4 s")))
req.on("error", (e) => fail(`/readyz: ${e.message}`))
req.end()
