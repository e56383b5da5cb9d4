import { type ChildProcess, spawn } from "node:child_process"
import { request } from "node:http"
import { join } from "node:path"

// Real processes for the fault tests: our entry points run as children (each in its own
// process group, so a kill reaches tsx and node), and plain node:http requests with a Host
// header. Every wait polls with a deadline.

const TSX = join(process.cwd(), "node_modules/.bin/tsx")

export interface Child {
  readonly process: ChildProcess
  readonly output: () => string
  readonly exited: Promise<void>
}

/** Starts `entry` (e.g. src/main.ts) and resolves once its output contains `banner`. */
export const startEntry = async (
  entry: string,
  env: Record<string, string>,
  banner: RegExp,
  timeoutMs = 60_000,
): Promise<Child> => {
  const child = spawn(TSX, [entry], {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      PATH: process.env["PATH"]!,
      HOME: process.env["HOME"] ?? "/root",
      NODE_ENV: "test",
      LOG_REQUESTS: "false",
      ...env,
    },
  })
  let output = ""
  child.stdout!.on("data", (c: Buffer) => {
    output += c.toString()
  })
  child.stderr!.on("data", (c: Buffer) => {
    output += c.toString()
  })
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()))
  const handle: Child = { process: child, output: () => output, exited }
  await until(`${entry} to start`, async () => (banner.test(output) ? true : undefined), timeoutMs).catch((e) => {
    killGroup(handle, "SIGKILL")
    throw new Error(`${(e as Error).message}; output: ${output}`)
  })
  return handle
}

export const killGroup = (child: Child, signal: NodeJS.Signals) => {
  try {
    process.kill(-child.process.pid!, signal)
  } catch {
    // already gone
  }
}

export const stopChild = async (child: Child) => {
  if (child.process.exitCode !== null || child.process.signalCode !== null) return
  killGroup(child, "SIGTERM")
  const timer = setTimeout(() => killGroup(child, "SIGKILL"), 15_000)
  await child.exited
  clearTimeout(timer)
}

export const until = async <T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs = 100,
): Promise<T> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe().catch(() => undefined)
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

export interface Answer {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly text: string
  readonly ms: number
}

/** One HTTP request to 127.0.0.1 with the given Host; a transport failure is status 0. */
export const call = (
  port: number,
  host: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown; rawBody?: string } = {},
) =>
  new Promise<Answer>((resolve) => {
    const started = Date.now()
    const body =
      init.rawBody !== undefined
        ? Buffer.from(init.rawBody)
        : init.body === undefined
          ? undefined
          : Buffer.from(JSON.stringify(init.body))
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: init.method ?? "GET",
        headers: {
          host,
          ...(body ? { "content-type": "application/json", "content-length": String(body.length) } : {}),
          ...init.headers,
        },
      },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString("utf8"),
            ms: Date.now() - started,
          }),
        )
      },
    )
    req.on("error", () => resolve({ status: 0, headers: {}, text: "", ms: Date.now() - started }))
    req.end(body)
  })
