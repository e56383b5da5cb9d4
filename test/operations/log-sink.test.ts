import { execFile } from "node:child_process"
import { resolve } from "node:path"
import { promisify } from "node:util"
import { afterEach, describe, expect, it, vi } from "vitest"
import { writeLogLine } from "../../src/platform/observability/log-sink.js"

// Production log lines leave the process in one write per turn of the event loop
// (src/platform/observability/log-sink.ts): in order, and none lost when the process exits.

const run = promisify(execFile)
const ROOT = resolve(import.meta.dirname, "../..")
const nextTurn = () => new Promise<void>((r) => setImmediate(r))

afterEach(() => {
  vi.restoreAllMocks()
})

describe("log sink", () => {
  it("writes the lines of one turn together, in the order they were logged, after the turn's work", async () => {
    await nextTurn()
    const writes: Array<string> = []
    vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      writes.push(String(chunk))
      return true
    })
    writeLogLine("first\n")
    writeLogLine("second\n")
    await Promise.resolve()
    writeLogLine("third\n")
    expect(writes).toEqual([])
    await nextTurn()
    expect(writes).toEqual(["first\nsecond\nthird\n"])
    writeLogLine("next turn\n")
    await nextTurn()
    expect(writes).toEqual(["first\nsecond\nthird\n", "next turn\n"])
    await nextTurn()
    expect(writes).toHaveLength(2)
  })

  it("writes the last turn's lines when the process exits before the turn ends", async () => {
    const script = [
      `import { writeLogLine } from ${JSON.stringify(resolve(ROOT, "src/platform/observability/log-sink.ts"))}`,
      `for (let i = 0; i < 1000; i++) writeLogLine("line " + i + "\\n")`,
      "process.exitCode = 3",
      "process.exit()",
    ].join("\n")
    const exit = await run(
      resolve(ROOT, "node_modules/.bin/node"),
      ["--import", "tsx", "--input-type=module", "-e", script],
      {
        cwd: ROOT,
      },
    ).then(
      () => 0,
      (e: { code: number; stdout: string }) => e,
    )
    expect(exit).not.toBe(0)
    const { code, stdout } = exit as { code: number; stdout: string }
    expect(code).toBe(3)
    expect(stdout).toBe(Array.from({ length: 1000 }, (_, i) => `line ${i}\n`).join(""))
  })
})
