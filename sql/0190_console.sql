-- The admin console signs platform users in through one of the service's own Environments
-- (docs/decisions/admin-console.md). The platform Environment and its client are created on
-- first use; this row names them (one per installation).
create table console_platform (
  singleton boolean primary key default true check (singleton),
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  client_id text not null,
  created_at timestamptz not null
);

-- What a console sign-in started in the platform Environment: its user and login session,
-- so signing out of the console also ends that session.
create table console_sessions (
  dashboard_session_id text primary key references dashboard_sessions(id),
  environment_id text not null references environments(id),
  user_id text not null,
  login_session_id text,
  created_at timestamptz not null
);
