import { Effect } from "effect"
import { SqlClient } from "effect/sql"

// SQL of social login and linking (sql/0075_social_login.sql); no rules here.

export interface SocialStateRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly kind: "login" | "link"
  readonly provider: string
  readonly connection_id: string
  readonly transaction_id: string | null
  readonly user_id: string | null
  readonly client_id: string | null
  readonly link_redirect_uri: string | null
  readonly provider_redirect_uri: string
  readonly code_verifier_sealed: string
  readonly nonce: string
  readonly created_at: Date
  readonly expires_at: Date
  readonly used_at: Date | null
}

const stateColumns = (sql: SqlClient.SqlClient) => sql`id, workspace_id, environment_id, kind, provider, connection_id,
  transaction_id, user_id, client_id, link_redirect_uri, provider_redirect_uri, code_verifier_sealed, nonce, created_at,
  expires_at, used_at`

export interface NewSocialState {
  readonly id: string
  readonly workspaceId: string
  readonly environmentId: string
  readonly kind: "login" | "link"
  readonly provider: string
  readonly connectionId: string
  readonly transactionId: string | null
  readonly userId: string | null
  readonly clientId: string | null
  readonly linkRedirectUri: string | null
  readonly providerRedirectUri: string
  readonly codeVerifierSealed: string
  readonly nonce: string
  readonly now: Date
  readonly expiresAt: Date
}

export const insertState = (s: NewSocialState) => SqlClient.SqlClient.use((sql) =>
  sql`insert into social_states (id, workspace_id, environment_id, kind, provider, connection_id, transaction_id, user_id,
      client_id, link_redirect_uri, provider_redirect_uri, code_verifier_sealed, nonce, created_at, expires_at)
    values (${s.id}, ${s.workspaceId}, ${s.environmentId}, ${s.kind}, ${s.provider}, ${s.connectionId}, ${s.transactionId},
      ${s.userId}, ${s.clientId}, ${s.linkRedirectUri}, ${s.providerRedirectUri}, ${s.codeVerifierSealed}, ${s.nonce},
      ${s.now}, ${s.expiresAt})`).pipe(Effect.asVoid)

/**
 * Uses a state once: one conditional UPDATE, so of two callbacks carrying the same state
 * exactly one gets the row (the other: replay). Returns undefined when it was already used,
 * expired, or belongs to another Environment or provider.
 */
export const useState = (environmentId: string, id: string, provider: string, now: Date) => SqlClient.SqlClient.use((sql) =>
  sql<SocialStateRow>`update social_states set used_at = ${now}
    where environment_id = ${environmentId} and id = ${id} and provider = ${provider} and used_at is null and expires_at > ${now}
    returning ${stateColumns(sql)}`).pipe(Effect.map((rows) => rows[0]))

/** Keeps a Hosted Login callback's answer (sealed) for the bound browser to finish, behind a one-time token. */
export const deferCallback = (environmentId: string, id: string, callbackSealed: string, handoffTokenHash: string) =>
  SqlClient.SqlClient.use((sql) => sql`update social_states set callback_sealed = ${callbackSealed}, handoff_token_hash = ${handoffTokenHash}
    where environment_id = ${environmentId} and id = ${id}`).pipe(Effect.asVoid)

/** Uses a hand-off token once, within the state's lifetime; returns the state row and its sealed answer. */
export const claimDeferredCallback = (environmentId: string, handoffTokenHash: string, now: Date) => SqlClient.SqlClient.use((sql) =>
  sql<SocialStateRow & { readonly callback_sealed: string }>`update social_states set handoff_used_at = ${now}
    where environment_id = ${environmentId} and handoff_token_hash = ${handoffTokenHash} and handoff_used_at is null
      and callback_sealed is not null and expires_at > ${now}
    returning ${stateColumns(sql)}, callback_sealed`).pipe(Effect.map((rows) => rows[0]))

/** Housekeeping: states a day past their expiry are of no use to anyone. */
export const deleteExpiredStates = (before: Date) => SqlClient.SqlClient.use((sql) =>
  sql`delete from social_states where expires_at < ${before}`).pipe(Effect.asVoid)

export interface IdentityRow {
  readonly id: string
  readonly user_id: string
  readonly provider: string
  readonly provider_subject: string
}

/** THE identity of a provider subject in an Environment (unique index identities_subject). */
export const identityBySubject = (environmentId: string, provider: string, subject: string) => SqlClient.SqlClient.use((sql) =>
  sql<IdentityRow>`select id, user_id, provider, provider_subject from identities
    where environment_id = ${environmentId} and provider = ${provider} and provider_subject = ${subject}`)
  .pipe(Effect.map((rows) => rows[0]))

/** Who a provider's answer names: the identity of its subject, and the user of its address. */
export interface AccountsNamed {
  readonly identity: { readonly id: string; readonly user_id: string } | undefined
  readonly emailUserId: string | undefined
}

/**
 * identityBySubject and the user of `emailNormalized` in ONE statement, so one snapshot: a
 * concurrent first login commits its user and identity together, so both are seen or
 * neither. Two reads would let that commit fall between them, and the address would look
 * like another account's (link_required) though it is this provider account's own.
 */
export const accountsNamedBy = (environmentId: string, provider: string, subject: string, emailNormalized: string | null) =>
  SqlClient.SqlClient.use((sql) => sql<{ identity_id: string | null; identity_user_id: string | null; email_user_id: string | null }>`
    select i.id as identity_id, i.user_id as identity_user_id, u.id as email_user_id
    from (select) as one
    left join identities i on i.environment_id = ${environmentId} and i.provider = ${provider} and i.provider_subject = ${subject}
    left join users u on u.environment_id = ${environmentId} and u.email_normalized = ${emailNormalized}`)
    .pipe(Effect.map(([row]): AccountsNamed => ({
      identity: row?.identity_id && row.identity_user_id ? { id: row.identity_id, user_id: row.identity_user_id } : undefined,
      emailUserId: row?.email_user_id ?? undefined,
    })))

export const userHasProviderIdentity = (environmentId: string, userId: string, provider: string) => SqlClient.SqlClient.use((sql) =>
  sql<{ found: boolean }>`select exists (select 1 from identities
    where environment_id = ${environmentId} and user_id = ${userId} and provider = ${provider}) as found`)
  .pipe(Effect.map((rows) => rows[0]?.found === true))

export interface NewIdentity {
  readonly id: string
  readonly workspaceId: string
  readonly environmentId: string
  readonly userId: string
  readonly connectionId: string
  readonly provider: string
  readonly subject: string
  readonly email: string | null
  readonly now: Date
}

/** Returns false when the subject is already linked (the unique index decides a race). */
export const insertIdentity = (i: NewIdentity) => SqlClient.SqlClient.use((sql) =>
  sql<{ id: string }>`insert into identities (id, workspace_id, environment_id, user_id, connection_id, provider,
      provider_subject, email, linked_at, last_used_at)
    values (${i.id}, ${i.workspaceId}, ${i.environmentId}, ${i.userId}, ${i.connectionId}, ${i.provider}, ${i.subject},
      ${i.email}, ${i.now}, ${i.now})
    on conflict (environment_id, provider, provider_subject) do nothing
    returning id`).pipe(Effect.map((rows) => rows.length === 1))

export const touchIdentity = (environmentId: string, id: string, email: string | null, now: Date) => SqlClient.SqlClient.use((sql) =>
  sql`update identities set last_used_at = ${now}, email = coalesce(${email}, email)
    where environment_id = ${environmentId} and id = ${id}`).pipe(Effect.asVoid)

export interface PendingLinkRow {
  readonly transaction_id: string
  readonly workspace_id: string
  readonly environment_id: string
  /** The existing account to prove; null when the address itself must be proven (sql/0155). */
  readonly user_id: string | null
  readonly connection_id: string
  readonly provider: string
  readonly provider_subject: string
  readonly email: string | null
  /** The provider's profile, for the account an address proof creates. */
  readonly name: string | null
  readonly avatar_url: string | null
  readonly locale: string | null
}

export const insertPendingLink = (p: PendingLinkRow & { readonly now: Date }) => SqlClient.SqlClient.use((sql) =>
  sql`insert into social_pending_links (transaction_id, workspace_id, environment_id, user_id, connection_id, provider,
      provider_subject, email, name, avatar_url, locale, created_at)
    values (${p.transaction_id}, ${p.workspace_id}, ${p.environment_id}, ${p.user_id}, ${p.connection_id}, ${p.provider},
      ${p.provider_subject}, ${p.email}, ${p.name}, ${p.avatar_url}, ${p.locale}, ${p.now})`).pipe(Effect.asVoid)

export const pendingLinkOf = (environmentId: string, transactionId: string) => SqlClient.SqlClient.use((sql) =>
  sql<PendingLinkRow>`select transaction_id, workspace_id, environment_id, user_id, connection_id, provider, provider_subject, email,
      name, avatar_url, locale
    from social_pending_links where environment_id = ${environmentId} and transaction_id = ${transactionId}`)
  .pipe(Effect.map((rows) => rows[0]))

/** The public view shown by GET /auth/transactions/{id} (`pending_link`), kept on the transaction. */
export const setPendingLinkView = (environmentId: string, transactionId: string, view: unknown, now: Date) =>
  SqlClient.SqlClient.use((sql) => sql`update auth_transactions set pending_link = ${view === null ? null : JSON.stringify(view)}::jsonb, updated_at = ${now}
    where environment_id = ${environmentId} and id = ${transactionId}`).pipe(Effect.asVoid)
