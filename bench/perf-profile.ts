// An on-CPU profile of one process with Linux `perf`, summarised by what the CPU was spent on
// (docs/decisions/performance.md, "Where a grant's server CPU goes, on-CPU"). Node's --cpu-prof
// samples the main thread by wall time, so the time a write to Postgres spends waiting to run
// again on a busy 2-core machine shows up as CPU of that write; `perf record` samples only what
// runs, in every thread of the process (the garbage collector's helpers included), kernel too.
// The process must run with `--perf-basic-prof` (JavaScript frames named from /tmp/perf-<pid>.map).
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { once } from "node:events"

/** Node options that name JavaScript frames for perf. */
export const PERF_NODE_OPTIONS = "--perf-basic-prof --interpreted-frames-native-stack"

/** Starts sampling `pid` (999 Hz, call graphs) into `file`; the returned function stops it. */
export const startPerf = (pid: number, file: string): (() => Promise<void>) => {
  const perf: ChildProcess = spawn("perf", ["record", "-q", "-F", "999", "-g", "-p", String(pid), "-o", file], {
    stdio: "ignore",
  })
  return async () => {
    if (perf.exitCode === null) {
      perf.kill("SIGINT")
      await once(perf, "exit")
    }
  }
}

interface Frame {
  readonly symbol: string
  readonly object: string
}

/** The samples of `perf script`, each its frames from the innermost out. */
const samplesOf = (file: string): Array<Array<Frame>> => {
  const text = execFileSync("perf", ["script", "-i", file], { maxBuffer: 1 << 30, stdio: ["ignore", "pipe", "ignore"] })
  const samples: Array<Array<Frame>> = []
  for (const block of text.toString("utf8").split("\n\n")) {
    const frames: Array<Frame> = []
    for (const line of block.split("\n").slice(1)) {
      const m = /^\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$/.exec(line)
      if (m) frames.push({ symbol: m[1]!.replace(/\+0x[0-9a-f]+$/, ""), object: m[2]! })
    }
    if (frames.length > 0) samples.push(frames)
  }
  return samples
}

const GC = /Scaveng|MarkCompact|Heap::|Sweeper|Marking|GCTracer|MinorMS/
const OPENSSL = /nistz256|ecdsa|ECDSA|bn_|BN_|sha256|SHA256|sha512|EVP|aes|gcm|HMAC|ossl|OPENSSL|ec_|EC_/

/**
 * What one sample was spent on. Garbage collection and OpenSSL by the innermost native frame;
 * everything else (V8's builtins, the kernel's socket calls) is charged to the innermost
 * JavaScript frame that led to it, by the package or file it belongs to.
 */
const categoryOf = (frames: ReadonlyArray<Frame>): string => {
  const inner = frames[0]!
  if (GC.test(inner.symbol)) return "garbage collection"
  if (OPENSSL.test(inner.symbol)) return "OpenSSL (signatures, hashes, AES)"
  const kernel = inner.object.includes("kernel")
  const js = frames.find((f) => f.symbol.startsWith("JS:"))
  if (js === undefined) return kernel ? "kernel, no JavaScript frame" : "V8, libuv and malloc, no JavaScript frame"
  const url = /(file:\/\/\S+|node:\S+)/.exec(js.symbol)?.[1] ?? js.symbol
  if (kernel)
    return url.includes("stream_base") || url.startsWith("node:net") ? "kernel: socket writes" : "kernel: other"
  if (url.includes("node_modules/effect/dist/sql/")) return "effect: sql"
  if (url.includes("node_modules/effect/dist/http/")) return "effect: http"
  if (url.includes("node_modules/effect/")) return "effect: runtime (fibers, Context, Schema)"
  if (url.includes("@effect/sql-pg")) return "@effect/sql-pg"
  if (url.includes("node_modules/")) return `package ${url.split("node_modules/").pop()!.split("/")[0]}`
  if (url.startsWith("node:internal/crypto")) return "node: crypto wrappers"
  if (url.startsWith("node:")) return "node: http, streams, buffers"
  return "our code"
}

/** Shares (percent) of the samples of `files` by category, largest first. */
export const summarisePerf = (files: ReadonlyArray<string>): Array<{ category: string; percent: number }> => {
  const counts = new Map<string, number>()
  let total = 0
  for (const file of files)
    for (const frames of samplesOf(file)) {
      const c = categoryOf(frames)
      counts.set(c, (counts.get(c) ?? 0) + 1)
      total++
    }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([category, n]) => ({ category, percent: (100 * n) / Math.max(1, total) }))
}
