import { randomInt } from "node:crypto"
import { createServer } from "node:net"

// Linux hands out outgoing connections' local ports from 32768-60999 (ip_local_port_range), and
// so did listen(0): a port found free there could be taken by some connection in the seconds
// before its real owner (embedded Postgres, a started server) binds it: EADDRINUSE, seen in tests.
// Below that range only a listener takes a port, and each candidate is tried before it is given.
const LOWEST = 20_000
const HIGHEST = 32_767
const ATTEMPTS = 50
// A port handed out is not handed out again by this process: its owner may not have bound it yet.
const given = new Set<number>()

const tryPort = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer()
    server.once("error", () => resolve(false))
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
  })

/** A TCP port on 127.0.0.1 that nothing listens on now, outside the range of outgoing connections. */
export const freePort = async (): Promise<number> => {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const port = randomInt(LOWEST, HIGHEST + 1)
    if (given.has(port) || !(await tryPort(port))) continue
    given.add(port)
    return port
  }
  throw new Error(`no free port between ${LOWEST} and ${HIGHEST} after ${ATTEMPTS} tries`)
}
