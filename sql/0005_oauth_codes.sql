-- One-time authorization codes, issued by `complete` (Public API or Hosted Login) and
-- consumed at the token endpoint. The code is a 256-bit secret; only its SHA-256 is kept.
create table authorization_codes (
  code_hash text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  transaction_id text not null,
  client_id text not null references clients(id),
  user_id text not null references users(id),
  session_id text not null references login_sessions(id),
  redirect_uri text not null,
  code_challenge text not null,
  scopes text[] not null,
  resources text[] not null default '{}',
  nonce text,
  method text not null check (method in ('email_otp', 'passkey', 'social')),
  acr text not null,
  auth_time timestamptz not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  consumed_at timestamptz,
  -- the refresh family its exchange created: revoked when the code is replayed
  refresh_family_id text
);
create index authorization_codes_expiry on authorization_codes (expires_at);

-- Idempotency records of Management writes: the first response, sealed, for 24 hours.
create table idempotency_keys (
  workspace_id text not null,
  key text not null,
  method text not null,
  route text not null,
  body_hash text not null,
  response_status integer,
  response_sealed text,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  primary key (workspace_id, key)
);
create index idempotency_keys_expiry on idempotency_keys (expires_at);
