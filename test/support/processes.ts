import { type ChildProcessByStdio, spawn } from "node:child_process"
import type { Readable } from "node:stream"
import { join } from "node:path"

const TSX = join(process.cwd(), "node_modules/.bin/tsx")

export interface Outcome {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs one of our entry points (src/main.ts, src/cli.ts, ...) as a real child process. */
export const runEntry = (entry: string, args: ReadonlyArray<string>, env: Record<string, string>, timeoutMs = 60_000) =>
  new Promise<Outcome>((resolve, reject) => {
    const child = spawn(TSX, [entry, ...args], {
      env: { PATH: process.env["PATH"]!, HOME: process.env["HOME"] ?? "/root", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (c: Buffer) => {
      stdout += c
    })
    child.stderr.on("data", (c: Buffer) => {
      stderr += c
    })
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`timeout: ${stdout} ${stderr}`))
    }, timeoutMs)
    child.on("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })

/** `npm run cli -- <args> --json` as a child process: exit code and the one JSON object printed. */
export const runCliJson = async (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const outcome = await runEntry("src/cli.ts", [...args, "--json"], { LOG_REQUESTS: "false", ...env })
  const lines = outcome.stdout
    .trim()
    .split("\n")
    .filter((l) => l !== "")
  return { ...outcome, json: lines.length === 1 ? (JSON.parse(lines[0]!) as Record<string, any>) : undefined }
}

/** A long-running child's stdout and stderr together as they arrive, and its exit code. */
export const watchChild = (child: ChildProcessByStdio<null, Readable, Readable>) => {
  let output = ""
  const collect = (c: Buffer) => {
    output += c
  }
  child.stdout.on("data", collect)
  child.stderr.on("data", collect)
  return {
    output: () => output,
    exited: new Promise<number | null>((resolve) => child.on("exit", resolve)),
  }
}
