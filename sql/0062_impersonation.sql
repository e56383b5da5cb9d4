-- Impersonation sessions (spec: "Other Management routes", POST /impersonation and
-- /impersonation/stop; Limits: reason 10 to 1000 characters, duration 1 to 15 minutes).
-- Started only by an Owner/Admin Dashboard session; the cookie carries a 256-bit secret
-- of which only the SHA-256 is kept.
create table impersonation_sessions (
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  platform_user_id text not null references platform_users(id),
  target_user_id text not null references users(id),
  reason text not null,
  duration_minutes integer not null check (duration_minutes between 1 and 15),
  cookie_hash text not null unique,
  started_at timestamptz not null,
  expires_at timestamptz not null,
  ended_at timestamptz,
  end_reason text check (end_reason in ('stopped', 'replaced'))
);
create index impersonation_sessions_active on impersonation_sessions (platform_user_id) where ended_at is null;
create index impersonation_sessions_environment on impersonation_sessions (environment_id, started_at);
