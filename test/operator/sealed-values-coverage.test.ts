import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"
import type { SealContext } from "../../src/platform/crypto.js"
import { SEALED_VALUES } from "../../src/operator/master-key/sealed-values.js"

// docs/master-key-rotation.md: the rotation must re-seal every value sealed under MASTER_KEY. The
// database check (rotation refuses unknown `*_sealed`/`sealed` columns and job payloads) sees
// only what exists at run time; this test reads the source: every `.seal(` call must name its
// SealContext through an exported builder function, and the purpose and table that builder
// gives must be covered by an entry of SEALED_VALUES. A new sealed value cannot be forgotten.

const SRC = resolve(import.meta.dirname, "../../src")

/** Calls of `.seal(` that do not seal under MASTER_KEY, with the reason. */
const NOT_MASTER_KEY: Readonly<Record<string, string>> = {
  // The Hono helpers seal their cookies with the relying party's own secrets (makeSealer).
  "hono/routes.ts": "the RP adapter's cookie sealer",
  "hono/session.ts": "the RP adapter's cookie sealer",
  // The rotation itself re-seals with the registry's own contexts.
  "operator/master-key/service.ts": "the re-sealing of SEALED_VALUES",
}

const sourceFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith(".ts")
        ? [join(dir, entry.name)]
        : [],
  )

interface SealCall {
  readonly file: string
  readonly builder: string | undefined
}

/** Every `.seal(` call in src (but the secret box's definition), with the function its first argument calls. */
const sealCalls = (): Array<SealCall> =>
  sourceFiles(SRC).flatMap((file) => {
    const rel = relative(SRC, file)
    if (rel === "platform/crypto.ts") return []
    const text = readFileSync(file, "utf8")
    return [...text.matchAll(/\.seal\(\s*([A-Za-z_$][\w$]*)?(\()?/g)].map((m) => ({
      file: rel,
      builder: m[2] ? m[1] : undefined,
    }))
  })

/** Where `name` comes from in `file`: an import (module and exported name) or the file itself. */
const origin = (file: string, name: string) => {
  const text = readFileSync(join(SRC, file), "utf8")
  for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*"([^"]+)"/g)) {
    for (const part of m[1]!.split(",")) {
      const [exported, local] = part
        .trim()
        .replace(/^type\s+/, "")
        .split(/\s+as\s+/)
      if ((local ?? exported) === name)
        return { module: resolve(dirname(join(SRC, file)), m[2]!.replace(/\.js$/, ".ts")), exported: exported! }
    }
  }
  return { module: join(SRC, file), exported: name }
}

const covered = (ctx: SealContext) =>
  SEALED_VALUES.some((v) => {
    const sample = v.context(Object.fromEntries(["row", ...Object.keys(v.fields)].map((k) => [k, "0"])))
    return sample.purpose === ctx.purpose && sample.table === ctx.table
  })

describe("every value sealed under MASTER_KEY is known to the rotation", () => {
  it("each `.seal(` call builds its context with an exported builder whose purpose and table SEALED_VALUES covers", async () => {
    const calls = sealCalls().filter((c) => NOT_MASTER_KEY[c.file] === undefined)
    expect(calls.length).toBeGreaterThanOrEqual(11)
    const problems: Array<string> = []
    for (const call of calls) {
      if (call.builder === undefined) {
        problems.push(`${call.file}: seal() must take its SealContext from a named builder function`)
        continue
      }
      const { module, exported } = origin(call.file, call.builder)
      const builder = (await import(module))[exported] as ((...args: Array<unknown>) => SealContext) | undefined
      if (typeof builder !== "function") {
        problems.push(
          `${call.file}: ${call.builder} is not exported by ${relative(SRC, module)} (the rotation registry must use it)`,
        )
        continue
      }
      const ctx = builder(...Array.from({ length: builder.length }, () => "0"))
      if (!covered(ctx))
        problems.push(`${call.file}: purpose ${ctx.purpose} in table ${ctx.table} is not in SEALED_VALUES`)
    }
    expect(problems).toEqual([])
  })

  it("the check itself catches a seal call that the registry does not cover", () => {
    expect(covered({ purpose: "email-change-notice", table: "users", rowId: "x" })).toBe(true)
    expect(covered({ purpose: "something-new", table: "users", rowId: "x" })).toBe(false)
    expect(origin("me/email-change/notice-job.ts", "sealContext")).toEqual({
      module: join(SRC, "me/email-change/notice-job.ts"),
      exported: "sealContext",
    })
    expect(origin("operator/master-key/sealed-values.ts", "emailChangeNoticeContext")).toEqual({
      module: join(SRC, "me/email-change/notice-job.ts"),
      exported: "sealContext",
    })
  })
})
