import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { FIXED_ISSUERS, type IdentityKey } from "./identity-key.js"

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
  /** A link: the session that started it. */
  readonly session_id: string | null
  readonly link_redirect_uri: string | null
  readonly provider_redirect_uri: string
  readonly code_verifier_sealed: string
  readonly nonce: string
  readonly created_at: Date
  readonly expires_at: Date
  readonly used_at: Date | null
}

const stateColumns = (sql: SqlClient.SqlClient) => sql`id, workspace_id, environment_id, kind, provider, connection_id,
  transaction_id, user_id, client_id, session_id, link_redirect_uri, provider_redirect_uri, code_verifier_sealed, nonce, created_at,
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
  readonly sessionId: string | null
  readonly linkRedirectUri: string | null
  readonly providerRedirectUri: string
  readonly codeVerifierSealed: string
  readonly nonce: string
  readonly now: Date
  readonly expiresAt: Date
}

export const insertState = (s: NewSocialState) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql`insert into social_states (id, workspace_id, environment_id, kind, provider, connection_id, transaction_id, user_id,
      client_id, session_id, link_redirect_uri, provider_redirect_uri, code_verifier_sealed, nonce, created_at, expires_at)
    values (${s.id}, ${s.workspaceId}, ${s.environmentId}, ${s.kind}, ${s.provider}, ${s.connectionId}, ${s.transactionId},
      ${s.userId}, ${s.clientId}, ${s.sessionId}, ${s.linkRedirectUri}, ${s.providerRedirectUri}, ${s.codeVerifierSealed}, ${s.nonce},
      ${s.now}, ${s.expiresAt})`,
  ).pipe(Effect.asVoid)

/**
 * Uses a state once: one conditional UPDATE, so of two callbacks carrying the same state
 * exactly one gets the row (the other: replay). Returns undefined when it was already used,
 * expired, or belongs to another Environment or provider.
 */
export const useState = (environmentId: string, id: string, provider: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<SocialStateRow>`update social_states set used_at = ${now}
    where environment_id = ${environmentId} and id = ${id} and provider = ${provider} and used_at is null and expires_at > ${now}
    returning ${stateColumns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Keeps a Hosted Login callback's answer (sealed) for the bound browser to finish, behind a one-time token. */
export const deferCallback = (environmentId: string, id: string, callbackSealed: string, handoffTokenHash: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql`update social_states set callback_sealed = ${callbackSealed}, handoff_token_hash = ${handoffTokenHash}
    where environment_id = ${environmentId} and id = ${id}`,
  ).pipe(Effect.asVoid)

/** Uses a hand-off token once, within the state's lifetime; returns the state row and its sealed answer. */
export const claimDeferredCallback = (environmentId: string, handoffTokenHash: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<SocialStateRow & { readonly callback_sealed: string }>`update social_states set handoff_used_at = ${now}
    where environment_id = ${environmentId} and handoff_token_hash = ${handoffTokenHash} and handoff_used_at is null
      and callback_sealed is not null and expires_at > ${now}
    returning ${stateColumns(sql)}, callback_sealed`,
  ).pipe(Effect.map((rows) => rows[0]))

/** A link's callback: what the provider verified (sealed) and the one-time link code's hash, for the confirm. */
export const keepLinkResult = (environmentId: string, id: string, resultSealed: string, linkCodeHash: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql`update social_states set link_result_sealed = ${resultSealed}, link_code_hash = ${linkCodeHash}
    where environment_id = ${environmentId} and id = ${id} and kind = 'link'`,
  ).pipe(Effect.asVoid)

export interface LinkCodeClaim {
  readonly environmentId: string
  readonly linkCodeHash: string
  readonly provider: string
  readonly userId: string
  readonly clientId: string
  readonly sessionId: string
  readonly now: Date
}

/**
 * Uses a link code once: one conditional UPDATE, so of two racing confirms one gets the row.
 * Only for the same user, client and session that started the link, the provider of the path,
 * within the state's lifetime; anything else finds nothing (and changes nothing).
 */
export const claimLinkCode = (c: LinkCodeClaim) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<
        SocialStateRow & { readonly link_result_sealed: string }
      >`update social_states set link_confirmed_at = ${c.now}
    where environment_id = ${c.environmentId} and link_code_hash = ${c.linkCodeHash} and kind = 'link' and provider = ${c.provider}
      and user_id = ${c.userId} and client_id = ${c.clientId} and session_id = ${c.sessionId}
      and link_result_sealed is not null and link_confirmed_at is null and expires_at > ${c.now}
    returning ${stateColumns(sql)}, link_result_sealed`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Housekeeping: states a day past their expiry are of no use to anyone. */
export const deleteExpiredStates = (before: Date) =>
  SqlClient.SqlClient.use((sql) => sql`delete from social_states where expires_at < ${before}`).pipe(Effect.asVoid)

export interface IdentityRow {
  readonly id: string
  readonly user_id: string
  readonly provider: string
  readonly provider_subject: string
  readonly provider_issuer: string | null
  readonly subject_claim: string
}

/** SQL condition: the identity row `i` is THE identity of `key` (./identity-key.ts); a legacy Microsoft row adopts. */
const keyMatches = (sql: SqlClient.SqlClient, key: IdentityKey) =>
  sql`i.provider = ${key.provider} and i.subject_claim = ${key.subjectClaim} and i.provider_subject = ${key.subject}
    and (i.provider_issuer is not distinct from ${key.issuer} or (${key.adoptsLegacy} and i.provider_issuer is null))`

/** THE identity of a key in an Environment (unique index identities_subject, sql/0167). */
export const identityByKey = (environmentId: string, key: IdentityKey) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<IdentityRow>`select id, user_id, provider, provider_subject, provider_issuer, subject_claim from identities i
    where i.environment_id = ${environmentId} and ${keyMatches(sql, key)}
    order by provider_issuer nulls last limit 1`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Who a provider's answer names: the identity of its key, and the user of its address. */
export interface AccountsNamed {
  readonly identity: { readonly id: string; readonly user_id: string } | undefined
  readonly emailUserId: string | undefined
}

/**
 * identityByKey and the user of `emailNormalized` in ONE statement, so one snapshot: a
 * concurrent first login commits its user and identity together, so both are seen or
 * neither. Two reads would let that commit fall between them, and the address would look
 * like another account's (link_required) though it is this provider account's own.
 */
export const accountsNamedBy = (environmentId: string, key: IdentityKey, emailNormalized: string | null) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ identity_id: string | null; identity_user_id: string | null; email_user_id: string | null }>`
    select i.id as identity_id, i.user_id as identity_user_id, u.id as email_user_id
    from (select) as one
    left join lateral (select id, user_id from identities i where i.environment_id = ${environmentId} and ${keyMatches(sql, key)}
      order by provider_issuer nulls last limit 1) i on true
    left join users u on u.environment_id = ${environmentId} and u.email_normalized = ${emailNormalized}`,
  ).pipe(
    Effect.map(
      ([row]): AccountsNamed => ({
        identity:
          row?.identity_id && row.identity_user_id ? { id: row.identity_id, user_id: row.identity_user_id } : undefined,
        emailUserId: row?.email_user_id ?? undefined,
      }),
    ),
  )

/**
 * SQL condition: the identity row `i` is in the namespace the connection row `c` issues now
 * (the twin of `isCurrentFor`, ./identity-key.ts): the subject claim of its mapping, and its
 * issuer (Microsoft: any tenant's). Never null, so `not (...)` selects exactly the stale ones.
 */
export const identityCurrentFor = (sql: SqlClient.SqlClient) => sql`coalesce(
    i.subject_claim = coalesce(c.profile_mapping->>'sub', 'sub') and case c.provider
      when 'microsoft' then true
      when 'generic_oidc' then i.provider_issuer = c.issuer
      when 'google' then i.provider_issuer = ${FIXED_ISSUERS.google}
      when 'apple' then i.provider_issuer = ${FIXED_ISSUERS.apple}
      when 'github' then i.provider_issuer = ${FIXED_ISSUERS.github}
      else false end,
    false)`

/** Whether the user has an identity of this provider that the connection still issues (one per provider per user). */
export const userHasCurrentProviderIdentity = (environmentId: string, userId: string, connectionId: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{
      found: boolean
    }>`select exists (select 1 from identities i join connections c on c.id = ${connectionId}
      where i.environment_id = ${environmentId} and i.user_id = ${userId} and i.provider = c.provider_key and ${identityCurrentFor(sql)}) as found`,
  ).pipe(Effect.map((rows) => rows[0]?.found === true))

/**
 * Deletes the user's identities of the connection's provider key that it no longer issues (after
 * an issuer or subject-claim change): they cannot sign in, and a proven new one replaces them.
 */
export const deleteStaleIdentities = (environmentId: string, userId: string, connectionId: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string; provider: string }>`delete from identities i using connections c
    where c.id = ${connectionId} and i.environment_id = ${environmentId} and i.user_id = ${userId} and i.provider = c.provider_key
      and not ${identityCurrentFor(sql)}
    returning i.id, i.provider`,
  )

export interface NewIdentity {
  readonly id: string
  readonly workspaceId: string
  readonly environmentId: string
  readonly userId: string
  readonly connectionId: string
  readonly key: IdentityKey
  readonly email: string | null
  readonly now: Date
}

/** Returns false when the key is already linked (the unique index decides a race). */
export const insertIdentity = (i: NewIdentity) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ id: string }>`insert into identities (id, workspace_id, environment_id, user_id, connection_id, provider,
      provider_issuer, subject_claim, provider_subject, email, linked_at, last_used_at)
    values (${i.id}, ${i.workspaceId}, ${i.environmentId}, ${i.userId}, ${i.connectionId}, ${i.key.provider}, ${i.key.issuer},
      ${i.key.subjectClaim}, ${i.key.subject}, ${i.email}, ${i.now}, ${i.now})
    on conflict (environment_id, provider, (coalesce(provider_issuer, '')), subject_claim, provider_subject) do nothing
    returning id`,
  ).pipe(Effect.map((rows) => rows.length === 1))

/** A sign-in through an identity: last use, the provider's current address, and a legacy row's issuer (sql/0167). */
export const touchIdentity = (
  environmentId: string,
  id: string,
  email: string | null,
  issuer: string | null,
  now: Date,
) =>
  SqlClient.SqlClient.use(
    (sql) => sql`update identities set last_used_at = ${now}, email = coalesce(${email}, email),
      provider_issuer = coalesce(provider_issuer, ${issuer})
    where environment_id = ${environmentId} and id = ${id}`,
  ).pipe(Effect.asVoid)

export interface PendingLinkRow {
  readonly transaction_id: string
  readonly workspace_id: string
  readonly environment_id: string
  /** The existing account to prove; null when the address itself must be proven (sql/0155). */
  readonly user_id: string | null
  readonly connection_id: string
  readonly provider: string
  readonly provider_subject: string
  /** The issuer and subject claim of the subject (sql/0167); null issuer only for a row older than that. */
  readonly provider_issuer: string | null
  readonly subject_claim: string
  readonly email: string | null
  /** The provider's profile, for the account an address proof creates. */
  readonly name: string | null
  readonly avatar_url: string | null
  readonly locale: string | null
}

export const insertPendingLink = (p: PendingLinkRow & { readonly now: Date }) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql`insert into social_pending_links (transaction_id, workspace_id, environment_id, user_id, connection_id, provider,
      provider_subject, provider_issuer, subject_claim, email, name, avatar_url, locale, created_at)
    values (${p.transaction_id}, ${p.workspace_id}, ${p.environment_id}, ${p.user_id}, ${p.connection_id}, ${p.provider},
      ${p.provider_subject}, ${p.provider_issuer}, ${p.subject_claim}, ${p.email}, ${p.name}, ${p.avatar_url}, ${p.locale}, ${p.now})`,
  ).pipe(Effect.asVoid)

export const pendingLinkOf = (environmentId: string, transactionId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<PendingLinkRow>`select transaction_id, workspace_id, environment_id, user_id, connection_id, provider, provider_subject,
      provider_issuer, subject_claim, email, name, avatar_url, locale
    from social_pending_links where environment_id = ${environmentId} and transaction_id = ${transactionId}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** The public view shown by GET /auth/transactions/{id} (`pending_link`), kept on the transaction. */
export const setPendingLinkView = (environmentId: string, transactionId: string, view: unknown, now: Date) =>
  SqlClient.SqlClient.use(
    (
      sql,
    ) => sql`update auth_transactions set pending_link = ${view === null ? null : JSON.stringify(view)}::jsonb, updated_at = ${now}
    where environment_id = ${environmentId} and id = ${transactionId}`,
  ).pipe(Effect.asVoid)
