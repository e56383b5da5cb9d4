-- Tenancy: Workspace > Project > Environment. Times come from the application's Clock,
-- never from now(): tests drive them with TestClock.

create table master_key_check (
  singleton boolean primary key default true check (singleton),
  check_value text not null
);

create table workspaces (
  id text primary key,
  name text not null,
  slug text not null unique,
  status text not null default 'active' check (status in ('active', 'suspended')),
  created_at timestamptz not null,
  updated_at timestamptz not null,
  version integer not null default 1
);

create table platform_users (
  id text primary key,
  email text not null unique,
  name text,
  created_at timestamptz not null
);

create table workspace_members (
  workspace_id text not null references workspaces(id),
  platform_user_id text not null references platform_users(id),
  role text not null check (role in ('owner', 'admin', 'member')),
  created_at timestamptz not null,
  updated_at timestamptz not null,
  primary key (workspace_id, platform_user_id)
);
create index workspace_members_user on workspace_members (platform_user_id);

-- Dashboard sessions are server-side: the cookie/bearer carries a random secret, we keep its SHA-256.
create table dashboard_sessions (
  id text primary key,
  secret_hash text not null unique,
  platform_user_id text not null references platform_users(id),
  created_at timestamptz not null,
  expires_at timestamptz not null,
  revoked_at timestamptz
);

create table projects (
  id text primary key,
  workspace_id text not null references workspaces(id),
  name text not null,
  slug text not null,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  deleted_at timestamptz,
  version integer not null default 1
);
create unique index projects_slug on projects (workspace_id, slug) where deleted_at is null;
create index projects_workspace_page on projects (workspace_id, id);

create table environments (
  id text primary key,
  workspace_id text not null references workspaces(id),
  project_id text not null references projects(id),
  type text not null check (type in ('test', 'production')),
  name text not null,
  status text not null default 'active' check (status in ('active', 'suspended', 'deleted')),
  impersonation_enabled boolean not null default false,
  new_user_creation_blocked boolean not null default false,
  theme jsonb not null default '{}'::jsonb,
  theme_version integer not null default 1,
  -- RP migration: the active RP ID defaults to the Interaction Domain's host; a custom
  -- domain with rp_enabled moves it, keeping the old one as legacy until disable-legacy.
  active_rp_id text,
  legacy_rp_id text,
  legacy_rp_disabled_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  version integer not null default 1
);
create index environments_project_page on environments (project_id, id);
create index environments_workspace on environments (workspace_id, id);

-- Per-Environment ES256 signing keys. The private key is sealed under MASTER_KEY
-- (AES-256-GCM, associated data binds it to this row).
create table signing_keys (
  kid text primary key,
  environment_id text not null references environments(id),
  private_key_sealed text not null,
  public_jwk jsonb not null,
  status text not null check (status in ('active', 'retired')),
  created_at timestamptz not null,
  retired_at timestamptz,
  -- a retired key stays in the JWKS until tokens it signed have expired ...
  published_until timestamptz,
  -- ... and on the server (expired id_token_hint at logout) until this time.
  kept_until timestamptz
);
create unique index signing_keys_one_active on signing_keys (environment_id) where status = 'active';
create index signing_keys_environment on signing_keys (environment_id, created_at);

create table api_keys (
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text references environments(id),
  name text not null,
  scopes text[] not null check (cardinality(scopes) >= 1),
  secret_hash text not null unique,
  expires_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index api_keys_workspace_page on api_keys (workspace_id, id);
