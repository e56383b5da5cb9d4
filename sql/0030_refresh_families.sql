-- Refresh-token families (spec: "States and transitions", Refresh token family; docs/architecture.md
-- security model). A token is `rt_<family-id>.<generation>.<secret>`; only the family's
-- current generation refreshes. The family row is the lock that serialises concurrent
-- refreshes (SELECT ... FOR UPDATE).
create table refresh_families (
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  client_id text not null references clients(id),
  user_id text not null references users(id),
  -- the login session behind the family: it lives as long as the family (docs/decisions/login-and-tokens.md)
  session_id text not null references login_sessions(id),
  -- the original grant; a refresh may only narrow it, per request
  scopes text[] not null,
  resources text[] not null default '{}',
  auth_time timestamptz not null,
  -- the one generation that may refresh
  generation integer not null,
  created_at timestamptz not null,
  last_used_at timestamptz not null,
  -- 30 days since last use / 90 days since issue (spec: Limits)
  idle_expires_at timestamptz not null,
  absolute_expires_at timestamptz not null,
  -- The 5-second grace: the token response that retired `grace_generation`, sealed
  -- (AES-GCM bound to family and generation); replayed only to that generation until
  -- `grace_until`, then purged.
  grace_generation integer,
  grace_response_sealed text,
  grace_until timestamptz,
  revoked_at timestamptz,
  revoked_reason text check (revoked_reason in ('revoked', 'refresh_token_reuse', 'code_replayed', 'user_logout'))
);
create index refresh_families_session on refresh_families (session_id);
create index refresh_families_grace on refresh_families (grace_until) where grace_response_sealed is not null;
create index refresh_families_env_expiry on refresh_families (environment_id, idle_expires_at) where revoked_at is null;

-- One row per generation: the SHA-256 hex of its 256-bit secret. The current generation's
-- hash authenticates a refresh; an older generation's hash proves a reuse (only a holder of
-- that secret can revoke the family by replaying it).
create table refresh_tokens (
  family_id text not null references refresh_families(id) on delete cascade,
  generation integer not null,
  environment_id text not null references environments(id),
  secret_hash text not null,
  issued_at timestamptz not null,
  primary key (family_id, generation)
);
