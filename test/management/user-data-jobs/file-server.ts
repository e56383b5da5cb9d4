import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"

export interface Served {
  readonly status?: number
  readonly body?: string | Buffer
  readonly headers?: Record<string, string>
  /** Never answer (time-out tests). */
  readonly silent?: boolean
}

/** A local HTTP server that serves import files by path, and records what was requested. */
export const startFileServer = async () => {
  const files = new Map<string, Served>()
  const hits: Array<string> = []
  const server: Server = createServer((req, res) => {
    hits.push(req.url ?? "")
    const file = files.get(req.url ?? "")
    if (!file) return res.writeHead(404).end("not found")
    if (file.silent) return
    res.writeHead(file.status ?? 200, file.headers ?? {}).end(file.body ?? "")
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    port,
    hits,
    serve: (path: string, served: Served) => {
      files.set(path, served)
      return `http://127.0.0.1:${port}${path}`
    },
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
