-- Identities are matched on the provider's issuer, the claim the subject was read from and the
-- subject (OIDC Core 1.0 section 2: only `iss` + `sub` together are stable and unique), no longer
-- on (provider_key, subject) alone: re-pointing a generic OIDC connection's issuer, or remapping
-- its `profile_mapping.sub`, must not let another IdP's (or another claim's) equal value sign in
-- as an existing user (docs/decisions/social-login.md, Social login: "Identities carry their issuer").

-- NULL: an identity whose issuer is not known. Only legacy Microsoft rows are left so (the tenant
-- issuer https://login.microsoftonline.com/{tid}/v2.0 of the account was never recorded); such a
-- row adopts the validated tenant issuer at its next sign-in, which is safe because Microsoft
-- computes `sub` per application and user (pairwise), so no other tenant can present it.
alter table identities add column provider_issuer text;
alter table identities add column subject_claim text not null default 'sub';

-- Backfill from the connection the identity was made with: the fixed issuers of Google, Apple and
-- GitHub (GitHub has no issuer of its own; its OAuth origin stands in), the generic OIDC
-- connection's current issuer, and the claim its profile_mapping read the subject from.
-- (pg_temp: lives only for this migration's session.)
create or replace function pg_temp.identity_issuer(provider text, issuer text) returns text language sql immutable as $$
  select case provider
    when 'google' then 'https://accounts.google.com'
    when 'apple' then 'https://appleid.apple.com'
    when 'github' then 'https://github.com'
    when 'generic_oidc' then issuer
    else null end
$$;

update identities i set
    provider_issuer = pg_temp.identity_issuer(c.provider, c.issuer),
    subject_claim = coalesce(c.profile_mapping->>'sub', 'sub')
  from connections c
  where c.id = i.connection_id;

-- Identities stored without a connection reference: the Environment's live connection of that key.
update identities i set
    provider_issuer = pg_temp.identity_issuer(c.provider, c.issuer),
    subject_claim = coalesce(c.profile_mapping->>'sub', 'sub')
  from connections c
  where i.connection_id is null and c.environment_id = i.environment_id and c.provider_key = i.provider
    and c.deleted_at is null;

drop index identities_subject;
create unique index identities_subject on identities
  (environment_id, provider, (coalesce(provider_issuer, '')), subject_claim, provider_subject);

-- A pending link (link_required) links what the callback verified: the same three parts.
alter table social_pending_links add column provider_issuer text;
alter table social_pending_links add column subject_claim text not null default 'sub';
update social_pending_links p set
    provider_issuer = pg_temp.identity_issuer(c.provider, c.issuer),
    subject_claim = coalesce(c.profile_mapping->>'sub', 'sub')
  from connections c
  where c.id = p.connection_id;

-- `profile_mapping.sub` is for generic OIDC only now (a Google, Microsoft, GitHub or Apple subject
-- read from a claim users choose, such as GitHub's `login` or Microsoft's `preferred_username`,
-- would let anyone take that value). Existing mappings of other providers are dropped; their
-- identities keep the claim they were made with, so they match nothing and their users prove
-- the account once (link_required) to re-link.
update connections set profile_mapping = profile_mapping - 'sub', version = version + 1
  where provider <> 'generic_oidc' and profile_mapping->>'sub' is not null;
