/**
 * What the helpers put on the Hono context (spec: Web-framework adapter helpers). Declare
 * them on your app for typed `c.get(...)`: `new Hono<{ Variables: AuthVariables }>()`.
 */

/** The signed-in user: the ID token's user claims (protocol claims such as `nonce` removed). */
export interface AuthUser {
  readonly sub: string
  readonly email?: string
  readonly email_verified?: boolean
  readonly name?: string
  readonly [claim: string]: unknown
}

/** The application's view of the session (the tokens themselves stay inside the sealed cookie). */
export interface AuthSession {
  /** Random per sign-in; stays the same across refreshes. */
  readonly id: string
  readonly user: AuthUser
  /** When the current access token expires (epoch milliseconds). */
  readonly accessTokenExpiresAt: number
  readonly scope: ReadonlyArray<string>
}

/** Set by authMiddleware: undefined when there is no valid session. */
export interface AuthVariables {
  authSession: AuthSession | undefined
  authUser: AuthUser | undefined
  accessToken: string | undefined
}

/** Set by requireSession: handlers behind it always have a session. */
export interface SessionVariables {
  authSession: AuthSession
  authUser: AuthUser
  accessToken: string
}

export interface AccessTokenClaims {
  readonly iss: string
  readonly sub: string
  readonly aud?: string | ReadonlyArray<string>
  readonly exp: number
  readonly iat?: number
  readonly scope?: string
  readonly client_id?: string
  readonly act?: AccessTokenActor
  readonly [claim: string]: unknown
}

/**
 * RFC 8693 4.1 `act`: who acts for the subject. The issuer sets it on impersonation tokens
 * (`{ sub: <Dashboard user id>, actor_type: "workspace_member" }`); a nested `act` names an
 * earlier actor of a delegation chain.
 */
export interface AccessTokenActor {
  readonly sub: string
  readonly act?: AccessTokenActor
  readonly [claim: string]: unknown
}

export interface BearerVariables {
  accessTokenClaims: AccessTokenClaims | undefined
  accessTokenSubject: string | undefined
  /** The `scope` claim split on spaces (RFC 9068 2.2.3). */
  accessTokenScope: ReadonlyArray<string> | undefined
  /** The token's `act` claim: set only when someone else acts as the subject (an impersonation). */
  accessTokenAct: AccessTokenActor | undefined
  /** `act.sub`: who is impersonating the subject, or undefined for the user's own token. */
  accessTokenImpersonator: string | undefined
}
