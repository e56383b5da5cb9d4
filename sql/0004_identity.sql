-- End users and what authenticates them, per Environment. Defined here once so the
-- Management API, login, passkey and webhook capabilities share final columns.

create table users (
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  email text not null,
  -- lower-cased, trimmed: the uniqueness and lookup key
  email_normalized text not null,
  email_verified boolean not null default false,
  email_suppressed boolean not null default false,
  name text,
  avatar_url text,
  locale text,
  timezone text,
  metadata jsonb not null default '{}'::jsonb,
  status text not null default 'active' check (status in ('active', 'blocked', 'pending_deletion')),
  blocked_reason text,
  -- `sv` claim: bumped on email change, block, deletion; tokens with an older sv are inactive
  security_version integer not null default 1,
  -- opaque WebAuthn user handle (never the email)
  user_handle text not null unique,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  last_login_at timestamptz,
  deleted_at timestamptz,
  version integer not null default 1
);
create unique index users_email on users (environment_id, email_normalized);
create index users_env_page on users (environment_id, id);
create index users_env_status_page on users (environment_id, status, id);
create index users_env_email_prefix on users (environment_id, email_normalized text_pattern_ops);

create table clients (
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  client_type text not null check (client_type in ('web_bff', 'web_spa', 'react_native')),
  name text not null,
  token_endpoint_auth_method text not null check (token_endpoint_auth_method in ('none', 'client_secret_basic', 'client_secret_post')),
  -- SHA-256 of the current secret (256-bit random); null for public clients
  secret_hash text,
  redirect_uris text[] not null default '{}',
  post_logout_redirect_uris text[] not null default '{}',
  allowed_origins text[] not null default '{}',
  allowed_scopes text[] not null default '{openid,profile,email,offline_access}',
  allowed_resources text[] not null default '{}',
  require_pkce boolean not null default true,
  status text not null default 'active' check (status in ('active', 'disabled')),
  mobile_app jsonb,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  deleted_at timestamptz,
  version integer not null default 1
);
create index clients_env_page on clients (environment_id, id) where deleted_at is null;
create unique index clients_secret_hash on clients (secret_hash) where secret_hash is not null;

create table connections (
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  provider text not null check (provider in ('google', 'apple', 'github', 'microsoft', 'generic_oidc')),
  mode text not null check (mode in ('managed', 'byo')),
  provider_key text not null,
  provider_client_id text,
  -- AES-256-GCM under MASTER_KEY; never returned
  provider_client_secret_sealed text,
  issuer text,
  scopes text[] not null default '{}',
  profile_mapping jsonb not null default '{}'::jsonb,
  status text not null default 'active' check (status in ('active', 'disabled')),
  owner_confirmed boolean not null default false,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  deleted_at timestamptz,
  version integer not null default 1
);
create index connections_env_page on connections (environment_id, id) where deleted_at is null;

create table identities (
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  user_id text not null references users(id),
  connection_id text references connections(id),
  provider text not null,
  provider_subject text not null,
  email text,
  linked_at timestamptz not null,
  last_used_at timestamptz
);
create unique index identities_subject on identities (environment_id, provider, provider_subject);
create index identities_user_page on identities (user_id, id);

create table passkeys (
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  user_id text not null references users(id),
  -- base64url credential id; never returned by list endpoints
  credential_id text not null,
  public_key bytea not null,
  sign_count bigint not null default 0,
  transports text[] not null default '{}',
  aaguid text,
  backed_up boolean not null default false,
  device_type text,
  rp_id text not null,
  user_handle text not null,
  name text,
  created_at timestamptz not null,
  last_used_at timestamptz
);
create unique index passkeys_credential on passkeys (environment_id, credential_id);
create index passkeys_user_page on passkeys (user_id, id);

-- Login sessions (`ses_`): created when a login transaction completes.
create table login_sessions (
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  user_id text not null references users(id),
  client_id text references clients(id),
  device_name text,
  method text not null check (method in ('email_otp', 'passkey', 'social')),
  acr text not null,
  auth_time timestamptz not null,
  -- the user's security version when the session was created
  security_version integer not null,
  ip_prefix_hash text,
  created_at timestamptz not null,
  last_active_at timestamptz not null,
  idle_expires_at timestamptz not null,
  absolute_expires_at timestamptz not null,
  revoked_at timestamptz,
  revoked_reason text check (revoked_reason in ('user_logout', 'admin_revocation', 'refresh_token_reuse', 'session_expired'))
);
create index login_sessions_user_page on login_sessions (user_id, id);
create index login_sessions_env_expiry on login_sessions (environment_id, idle_expires_at) where revoked_at is null;
