-- The housekeeping sweep finds sessions past either expiry across all Environments.
create index login_sessions_idle_expiry on login_sessions (idle_expires_at) where revoked_at is null;
create index login_sessions_absolute_expiry on login_sessions (absolute_expires_at) where revoked_at is null;
