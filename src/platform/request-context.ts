import { Context } from "effect"

/** Who is acting, as recorded in events (`actor`) and audit records. */
export interface Actor {
  readonly type: "end_user" | "workspace_member" | "api_key" | "system"
  readonly id?: string | undefined
}

/** Facts about the current request that services record (trace ids, client IP). */
export interface RequestInfo {
  readonly requestId: string
  readonly correlationId?: string | undefined
  /** The client IP: the socket peer, or the X-Forwarded-For entry TRUST_PROXY allows (src/platform/trust-proxy.ts). */
  readonly ip?: string | undefined
  /**
   * Header fields added to this request's answer, whatever it turns out to be (success or
   * error), e.g. the Management API's RateLimit fields; src/http/app.ts sets them last.
   */
  readonly responseHeaders?: Record<string, string>
}

export const CurrentRequest = Context.Reference<RequestInfo | undefined>("platform/CurrentRequest", {
  defaultValue: () => undefined,
})
