/** An Environment row with the public addresses derived from configuration. */
export interface EnvironmentRecord {
  readonly id: string
  readonly workspaceId: string
  readonly projectId: string
  readonly type: "test" | "production"
  readonly name: string
  readonly status: "active" | "suspended" | "deleted"
  readonly impersonationEnabled: boolean
  readonly newUserCreationBlocked: boolean
  readonly activeRpId: string | null
  readonly legacyRpId: string | null
  readonly legacyRpDisabledAt: Date | null
  /** Hostname of the active custom domain serving as Interaction Domain, if any. */
  readonly customDomain: string | null
  readonly createdAt: Date
  readonly updatedAt: Date
  readonly version: number
}

export interface EnvironmentUrls {
  /** `{scheme}://{canonical_issuer_host}/e/{environmentId}` */
  readonly issuer: string
  /** Host (with the public port) of the Interaction Domain. */
  readonly interactionDomain: string
  /** Origin of the Interaction Domain: `{scheme}://{interactionDomain}`. */
  readonly interactionOrigin: string
  /** WebAuthn RP ID: a host name, never with a port. */
  readonly rpId: string
}
