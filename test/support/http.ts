import { request as httpRequest } from "node:http"

export interface TestResponse {
  readonly status: number
  readonly headers: Record<string, string | string[] | undefined>
  readonly text: string
  readonly json: any
}

export interface RequestOptions {
  readonly method?: string
  readonly headers?: Record<string, string>
  /** An object is sent as JSON; a string as is. */
  readonly body?: unknown
}

/**
 * HTTP over a real socket to 127.0.0.1 with an explicit Host header: the server picks
 * its surface by Host, and nothing depends on DNS (fetch cannot set Host).
 */
export const send = (port: number, host: string, path: string, options: RequestOptions = {}) =>
  new Promise<TestResponse>((resolve, reject) => {
    const body =
      options.body === undefined
        ? undefined
        : typeof options.body === "string"
          ? options.body
          : JSON.stringify(options.body)
    const headers: Record<string, string> = { host, ...options.headers }
    if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type"))
      headers["content-type"] = "application/json"
    if (body !== undefined) headers["content-length"] = String(Buffer.byteLength(body))
    const req = httpRequest(
      { host: "127.0.0.1", port, path, method: options.method ?? (body === undefined ? "GET" : "POST"), headers },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          let json: unknown
          try {
            json = text === "" ? undefined : JSON.parse(text)
          } catch {
            json = undefined
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json })
        })
      },
    )
    req.on("error", reject)
    if (body !== undefined) req.write(body)
    req.end()
  })
