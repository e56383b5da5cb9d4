-- Social login and identity linking (spec: Public Authentication API "Social login"; /me
-- rule 2). Kept in Postgres so every replica sees them (docs/architecture.md: nothing another replica
-- needs lives in process memory).
--
-- One row per redirect to a provider. The `state` sent to the provider is a signed,
-- expiring reference to this row (HMAC under a key derived from MASTER_KEY); the callback
-- uses the row once (`used_at is null` in one conditional UPDATE), so a replayed state is
-- refused even while its signature and expiry are still good.
create table social_states (
  -- 256-bit random, base64url: the reference carried inside the signed `state`
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  -- `login`: a login transaction's social step; `link`: POST /me/identities/{provider}/link
  kind text not null check (kind in ('login', 'link')),
  provider text not null,
  connection_id text not null references connections(id),
  -- deleted with its transaction by login housekeeping (a day after expiry)
  transaction_id text references auth_transactions(id) on delete cascade,
  -- link: the user adding an identity, the calling client and its exact redirect URI
  user_id text references users(id) on delete cascade,
  client_id text references clients(id) on delete cascade,
  link_redirect_uri text,
  -- the redirect URI registered at the provider (the connection's callback URL at start)
  provider_redirect_uri text not null,
  -- PKCE verifier (RFC 7636), sealed with AES-256-GCM bound to this row
  code_verifier_sealed text not null,
  nonce text not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  used_at timestamptz
);
create index social_states_expiry on social_states (expires_at);

-- The identity a `link_required` transaction would link once the user proves the existing
-- account (never shown: GET shows only `pending_link`, the masked public view).
create table social_pending_links (
  transaction_id text primary key references auth_transactions(id) on delete cascade,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  user_id text not null references users(id) on delete cascade,
  connection_id text not null references connections(id),
  provider text not null,
  provider_subject text not null,
  email text,
  created_at timestamptz not null
);
