import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { bodyText } from "../../http/route.js"
import { invalidRequest } from "./errors.js"

/**
 * The parameters of an OAuth request, by name. Spec, OIDC / OAuth 2.0: "POST endpoints accept
 * application/x-www-form-urlencoded and also JSON (arrays for repeated values). In form
 * bodies `resource` may repeat." RFC 6749 3.1/3.2: parameters sent without a value are
 * treated as omitted, and no other parameter may be sent more than once.
 */
export class OAuthParams {
  constructor(private readonly values: ReadonlyMap<string, ReadonlyArray<string>>) {}

  /**
   * A single-valued parameter; sent twice is invalid_request. A value holding a NUL is
   * invalid_request too: no OAuth parameter may contain one (RFC 6749 Appendix A: VSCHAR /
   * NQCHAR), and Postgres cannot compare text with it (a lookup would fail as a server error).
   */
  one(name: string): Effect.Effect<string | undefined, ReturnType<typeof invalidRequest>> {
    const v = this.values.get(name)
    if (v === undefined || v.length === 0) return Effect.succeed(undefined)
    if (v.length > 1) return Effect.fail(invalidRequest(`${name} must not be sent more than once`))
    if (v[0]!.includes("\u0000")) return Effect.fail(invalidRequest(`${name} must not contain a NUL character`))
    return Effect.succeed(v[0])
  }

  /** A required single-valued parameter. */
  required(name: string) {
    return Effect.flatMap(this.one(name), (v) =>
      v === undefined ? Effect.fail(invalidRequest(`${name} is required`)) : Effect.succeed(v),
    )
  }

  /** A repeatable parameter (`resource`). */
  many(name: string): ReadonlyArray<string> {
    return this.values.get(name) ?? []
  }

  has(name: string) {
    return (this.values.get(name)?.length ?? 0) > 0
  }
}

const add = (map: Map<string, Array<string>>, name: string, value: string) => {
  if (value === "") return
  const list = map.get(name)
  if (list) list.push(value)
  else map.set(name, [value])
}

export const fromForm = (text: string) => {
  const map = new Map<string, Array<string>>()
  for (const [name, value] of new URLSearchParams(text)) add(map, name, value)
  return new OAuthParams(map)
}

/** The parsed query string of a GET (repeated names arrive as arrays). */
export const fromQuery = (query: Readonly<Record<string, string | ReadonlyArray<string>>>) => {
  const map = new Map<string, Array<string>>()
  for (const [name, value] of Object.entries(query)) {
    for (const v of typeof value === "string" ? [value] : value) add(map, name, v)
  }
  return new OAuthParams(map)
}

const fromJson = (text: string) => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return Effect.fail(invalidRequest("The request body is not valid JSON"))
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return Effect.fail(invalidRequest("The JSON body must be an object"))
  }
  const map = new Map<string, Array<string>>()
  for (const [name, v] of Object.entries(value)) {
    if (v === null) continue
    if (typeof v === "string") add(map, name, v)
    else if (Array.isArray(v) && v.every((x) => typeof x === "string")) for (const x of v) add(map, name, x)
    else return Effect.fail(invalidRequest(`${name} must be a string or an array of strings`))
  }
  return Effect.succeed(new OAuthParams(map))
}

/** Reads a form or JSON body; any other media type is invalid_request. */
export const readParams = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
  const text = yield* bodyText.pipe(Effect.mapError(() => invalidRequest("The request body could not be read")))
  if (type === "application/x-www-form-urlencoded") return fromForm(text)
  if (type === "application/json") return yield* fromJson(text)
  if (type === "" && text.trim() === "") return new OAuthParams(new Map())
  return yield* Effect.fail(invalidRequest("Send application/x-www-form-urlencoded or application/json"))
})
