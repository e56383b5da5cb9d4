-- Login transactions (spec: Public Authentication API, "Login transactions"; States and
-- transitions, "Login transaction"). Every status change is one conditional UPDATE
-- (`where status in (...)`), so concurrent requests have exactly one winner.

create table auth_transactions (
  -- `txn_` + 32 characters of [a-z2-7]: 160 random bits
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  client_id text not null references clients(id),
  -- exactly as sent (compared byte for byte with the registration, again at complete)
  redirect_uri text not null,
  code_challenge text not null,
  state text not null,
  nonce text,
  scopes text[] not null,
  resources text[] not null default '{}',
  response_mode text not null default 'redirect' check (response_mode in ('redirect', 'native_return')),
  status text not null default 'created' check (status in ('created', 'interaction_started', 'challenge_issued',
    'authenticated', 'code_issued', 'consumed', 'link_required', 'failed', 'expired')),
  -- how the user authenticated (`email_otp`, `passkey`, `social`), set with `authenticated`
  method text check (method in ('email_otp', 'passkey', 'social')),
  user_id text references users(id),
  authenticated_at timestamptz,
  -- social account linking (link_required): what the user must prove, shown by GET
  pending_link jsonb,
  -- `api`: POST /auth/transactions (custom UI); `authorize`: GET /oauth2/authorize (Hosted Login)
  source text not null check (source in ('api', 'authorize')),
  -- Hosted Login binding (docs/architecture.md: no transaction fixation). The authorize redirect carries a
  -- one-time hand-off token (SHA-256 kept here) that the Interaction Domain exchanges for an
  -- HttpOnly cookie secret (SHA-256 kept in browser_binding_hash).
  handoff_token_hash text unique,
  handoff_expires_at timestamptz,
  handoff_used_at timestamptz,
  browser_binding_hash text unique,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  expires_at timestamptz not null,
  code_issued_at timestamptz,
  consumed_at timestamptz,
  failed_at timestamptz,
  failed_reason text
);
create index auth_transactions_env on auth_transactions (environment_id, id);
create index auth_transactions_expiry on auth_transactions (expires_at)
  where status in ('created', 'interaction_started', 'challenge_issued', 'authenticated', 'link_required');
