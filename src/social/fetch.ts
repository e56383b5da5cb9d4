import type { IncomingMessage } from "node:http"
import { request as httpsRequest } from "node:https"
import { isIP } from "node:net"
import type { CustomFetch, CustomFetchOptions } from "openid-client"
import { isBlockedAddress } from "../platform/outbound/blocked-addresses.js"
import {
  BLOCKED_ADDRESS_CODE,
  guardedLookup,
  type Resolver,
  systemResolver,
} from "../platform/outbound/guarded-lookup.js"

/**
 * The one way social login talks to a provider: the webhook SSRF policy (docs/architecture.md, security
 * model) applied to outbound provider calls, handed to openid-client as its `customFetch`.
 * - https only (a provider's endpoints, a generic OIDC issuer included, are https URLs);
 * - the address is checked when the socket connects (the guarded lookup of webhook
 *   delivery, so DNS rebinding cannot reach a blocked address); IP literals are checked
 *   before connecting; WEBHOOK_ALLOW_PRIVATE_TARGETS (dev/test only) lifts the check;
 * - redirects are never followed (the 3xx is returned as is; openid-client asks for
 *   `redirect: "manual"` anyway);
 * - bounded total time and response size.
 * Trust anchors are Node's own: NODE_EXTRA_CA_CERTS adds CAs as Node does by itself.
 */

export const PROVIDER_TIMEOUT_MS = 10_000
export const MAX_PROVIDER_RESPONSE_BYTES = 512 * 1024

export interface ProviderFetchOptions {
  readonly allowPrivateTargets: boolean
  /** SOCIAL_PROVIDER_HOSTS: connect to another address for a host name (dev/test only). */
  readonly hosts: ReadonlyMap<string, { readonly address: string; readonly port: number }>
  readonly timeoutMs?: number
  readonly maxBytes?: number
  readonly resolver?: Resolver
  /** The W3C `traceparent` of the span making the calls (when spans are recorded): sent to the provider. */
  readonly traceparent?: string | undefined
}

/** A refused or failed outbound call; the message never carries secrets. */
export class ProviderFetchError extends Error {
  constructor(
    readonly reason: "scheme_not_https" | "blocked_address" | "timeout" | "too_large" | "connection_failed",
    message: string,
  ) {
    super(message)
  }
}

const bodyBytes = async (body: CustomFetchOptions["body"]): Promise<Buffer | undefined> => {
  if (body === undefined || body === null) return undefined
  if (typeof body === "string") return Buffer.from(body, "utf8")
  if (body instanceof URLSearchParams) return Buffer.from(body.toString(), "utf8")
  if (body instanceof Uint8Array) return Buffer.from(body)
  if (body instanceof ArrayBuffer) return Buffer.from(new Uint8Array(body))
  return Buffer.from(await new Response(body).arrayBuffer())
}

export const providerFetch = (options: ProviderFetchOptions): CustomFetch => {
  const timeoutMs = options.timeoutMs ?? PROVIDER_TIMEOUT_MS
  const maxBytes = options.maxBytes ?? MAX_PROVIDER_RESPONSE_BYTES
  const lookup = options.allowPrivateTargets ? undefined : guardedLookup(options.resolver ?? systemResolver)

  return async (url, init) => {
    const target = new URL(url)
    if (target.protocol !== "https:")
      throw new ProviderFetchError("scheme_not_https", "provider endpoints must use https")
    const override = options.hosts.get(target.hostname)
    const literal = target.hostname.replace(/^\[|\]$/g, "")
    const address = override?.address ?? (isIP(literal) ? literal : undefined)
    if (address !== undefined && !options.allowPrivateTargets && isBlockedAddress(address)) {
      throw new ProviderFetchError("blocked_address", "the provider host is a private, loopback or reserved address")
    }
    const body = await bodyBytes(init.body)
    return new Promise<Response>((resolve, reject) => {
      let settled = false
      const fail = (error: ProviderFetchError) => {
        if (settled) return
        settled = true
        clearTimeout(deadline)
        request.destroy()
        reject(error)
      }
      const request = httpsRequest(
        {
          protocol: "https:",
          host: override?.address ?? literal,
          port: override?.port ?? (target.port === "" ? 443 : Number(target.port)),
          servername: isIP(target.hostname) ? undefined : target.hostname,
          path: `${target.pathname}${target.search}`,
          method: init.method,
          headers: {
            ...init.headers,
            ...(options.traceparent === undefined ? {} : { traceparent: options.traceparent }),
            host: target.host,
            ...(body !== undefined ? { "content-length": String(body.length) } : {}),
          },
          ...(lookup && override === undefined ? { lookup } : {}),
          agent: false,
        },
        (res: IncomingMessage) => {
          const chunks: Array<Buffer> = []
          let received = 0
          res.on("data", (chunk: Buffer) => {
            received += chunk.length
            if (received > maxBytes)
              return fail(new ProviderFetchError("too_large", "the provider's response is too large"))
            chunks.push(chunk)
          })
          res.on("end", () => {
            if (settled) return
            settled = true
            clearTimeout(deadline)
            const headers = new Headers()
            for (const [name, value] of Object.entries(res.headers)) {
              if (value === undefined) continue
              for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v)
            }
            const status = res.statusCode ?? 502
            const nullBody = status === 204 || status === 205 || status === 304
            const response = new Response(nullBody ? null : Buffer.concat(chunks), { status, headers })
            // openid-client checks the URL of a response it is given
            Object.defineProperty(response, "url", { value: target.href })
            resolve(response)
          })
          res.on("error", () =>
            fail(new ProviderFetchError("connection_failed", "the provider's response was cut off")),
          )
        },
      )
      const deadline = setTimeout(
        () => fail(new ProviderFetchError("timeout", "the provider did not answer in time")),
        timeoutMs,
      )
      request.on("error", (error: NodeJS.ErrnoException) =>
        fail(
          new ProviderFetchError(
            error.code === BLOCKED_ADDRESS_CODE ? "blocked_address" : "connection_failed",
            error.code === BLOCKED_ADDRESS_CODE
              ? "the provider host resolves to a blocked address"
              : `the provider could not be reached (${error.code ?? "error"})`,
          ),
        ),
      )
      init.signal?.addEventListener("abort", () =>
        fail(new ProviderFetchError("timeout", "the provider call was aborted")),
      )
      request.end(body)
    })
  }
}

/** A failed provider call for the logs: the error and its cause's message (never bodies or secrets). */
export const describeProviderFailure = (cause: unknown): string => {
  if (!(cause instanceof Error)) return String(cause)
  const inner = cause.cause instanceof Error ? `: ${cause.cause.message}` : ""
  return `${cause.name}: ${cause.message}${inner}`
}
