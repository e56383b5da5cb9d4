-- Hosted Login sessions (single sign-on at Hosted Login, docs/decisions/hosted-login-sso.md):
-- one per browser and Environment, bound by an HttpOnly cookie whose secret only this
-- table's SHA-256 knows. It remembers the real sign-in (user, method, auth_time, the
-- user's security version then); a later authorization from the same browser may continue
-- as that user without signing in again. It ends when revoked (a linked login session
-- revoked by logout, by the user or an administrator, refresh-token reuse; all of the user's
-- sessions revoked; another account signed in on this browser), at its idle or absolute
-- expiry, or when the user is no longer active or their security version moved.
create table hosted_login_sessions (
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  user_id text not null references users(id) on delete cascade,
  secret_hash text not null unique,
  method text not null check (method in ('email_otp', 'passkey', 'social')),
  auth_time timestamptz not null,
  security_version integer not null,
  created_at timestamptz not null,
  last_used_at timestamptz not null,
  idle_expires_at timestamptz not null,
  absolute_expires_at timestamptz not null,
  revoked_at timestamptz,
  revoked_reason text check (revoked_reason in ('user_logout', 'admin_revocation', 'refresh_token_reuse', 'session_expired', 'replaced'))
);
create index hosted_login_sessions_user on hosted_login_sessions (environment_id, user_id) where revoked_at is null;
create index hosted_login_sessions_expiry on hosted_login_sessions (absolute_expires_at);

-- The login sessions a Hosted Login session produced (the real sign-in's and every
-- continuation's): revoking one of them revokes the Hosted Login session too.
alter table login_sessions add column hosted_login_session_id text references hosted_login_sessions(id) on delete set null;
create index login_sessions_hosted_login on login_sessions (hosted_login_session_id) where hosted_login_session_id is not null;
