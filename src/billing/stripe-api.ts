import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import type { StripeConfig } from "../platform/config-providers.js"

/**
 * The three calls billing makes to Stripe's REST API (customers, Checkout and Billing Portal
 * sessions), over fetch: form-encoded parameters with Stripe's bracket notation, the secret key
 * as Bearer, a pinned API version, a 10-second time-out and one retry of a failure Stripe marks
 * as retryable (network, 409, 429, 5xx, or `Stripe-Should-Retry: true`), under the same
 * Idempotency-Key so a retry cannot create twice. The official `stripe` package did the same
 * in 23 MB of a production install (docs/decisions/production-operation.md, "Shipping").
 */
export const STRIPE_API_VERSION = "2026-10-28.endive"
const TIMEOUT_MS = 10_000

type FormValue = string | number | ReadonlyArray<FormValue> | { readonly [key: string]: FormValue | undefined }

/** `{ metadata: { a: "b" }, items: [{ price: "p" }] }` -> `metadata[a]=b&items[0][price]=p`. */
export const stripeForm = (params: { readonly [key: string]: FormValue | undefined }): string => {
  const pairs: Array<[string, string]> = []
  const add = (key: string, value: FormValue | undefined) => {
    if (value === undefined) return
    if (typeof value === "string" || typeof value === "number") pairs.push([key, String(value)])
    else if (Array.isArray(value)) for (const [i, v] of value.entries()) add(`${key}[${i}]`, v)
    else for (const [k, v] of Object.entries(value)) add(`${key}[${k}]`, v)
  }
  for (const [k, v] of Object.entries(params)) add(k, v)
  return new URLSearchParams(pairs).toString()
}

const retryable = (res: Response) =>
  res.headers.get("stripe-should-retry") === "true" ||
  (res.headers.get("stripe-should-retry") !== "false" &&
    (res.status === 409 || res.status === 429 || res.status >= 500))

const once = async (url: string, init: RequestInit): Promise<{ res?: Response; error?: unknown }> => {
  try {
    return { res: await fetch(url, { ...init, signal: AbortSignal.timeout(TIMEOUT_MS) }) }
  } catch (error) {
    return { error }
  }
}

/** POST /v1/{path}: the parsed JSON of a 2xx answer; anything else fails with what Stripe said. */
export const stripePost = <A>(
  config: StripeConfig,
  path: string,
  params: { readonly [key: string]: FormValue | undefined },
  idempotencyKey: string = randomUUID(),
) =>
  Effect.tryPromise({
    try: async (): Promise<A> => {
      const base = config.apiBase?.origin ?? "https://api.stripe.com"
      const init: RequestInit = {
        method: "POST",
        headers: {
          authorization: `Bearer ${config.secretKey}`,
          "content-type": "application/x-www-form-urlencoded",
          "idempotency-key": idempotencyKey,
          "stripe-version": STRIPE_API_VERSION,
        },
        body: stripeForm(params),
      }
      let attempt = await once(`${base}/v1/${path}`, init)
      if (attempt.error !== undefined || (attempt.res !== undefined && retryable(attempt.res)))
        attempt = await once(`${base}/v1/${path}`, init)
      if (attempt.res === undefined)
        throw new Error(attempt.error instanceof Error ? attempt.error.message : String(attempt.error))
      const body = (await attempt.res.json().catch(() => undefined)) as
        | { readonly error?: { readonly message?: string } }
        | undefined
      if (!attempt.res.ok)
        throw new Error(`${attempt.res.status} ${body?.error?.message ?? "without an error message"}`)
      return body as A
    },
    catch: (e) => e,
  })
