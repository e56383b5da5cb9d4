import { call } from "./api.js"

export type Role = "owner" | "admin" | "member"

/** GET /console/api/session: the signed-in platform user and its Workspaces. */
export interface Session {
  readonly platform_user_id: string
  readonly email: string
  readonly workspaces: ReadonlyArray<{
    readonly id: string
    readonly name: string
    readonly slug: string
    readonly role: Role
  }>
}

export const loadSession = () => call<Session>("/console/api/session", { workspace: null }).then((a) => a.body)

export const signOut = () => call("/console/auth/logout", { method: "POST", workspace: null })

/** What `signin_error` (set by the console's callback) means, in words. */
export const SIGN_IN_ERRORS: Record<string, string> = {
  not_a_platform_user:
    "This email address has no console account. Ask an Owner of your Workspace to invite you, or have the operator run `platform-user create`.",
  state_mismatch: "The sign-in was started in another tab or expired. Start again.",
  access_denied: "The sign-in was cancelled.",
  email_not_verified: "The sign-in did not prove an email address.",
  code_exchange_failed: "The sign-in could not be completed. Start again.",
  invalid_id_token: "The sign-in answer could not be verified. Start again.",
  issuer_unreachable: "The sign-in service did not answer. Try again.",
}
