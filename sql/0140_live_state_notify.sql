-- docs/decisions/performance.md: replicas keep the live state of access tokens (user status, security version,
-- profile claims, the session's revocation and expiry) in memory; a change to it is announced
-- on channel live_state as '<environment_id> <user_id>' when it commits (NOTIFY is
-- transactional), so every replica drops that user's entries (src/oidc/access-token/live-cache.ts).
create or replace function notify_live_state_user() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' then
    perform pg_notify('live_state', old.environment_id || ' ' || old.id);
    return old;
  end if;
  perform pg_notify('live_state', new.environment_id || ' ' || new.id);
  return new;
end $$;

create or replace function notify_live_state_session() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' then
    perform pg_notify('live_state', old.environment_id || ' ' || old.user_id);
    return old;
  end if;
  perform pg_notify('live_state', new.environment_id || ' ' || new.user_id);
  if tg_op = 'UPDATE' and old.user_id is distinct from new.user_id then
    perform pg_notify('live_state', old.environment_id || ' ' || old.user_id);
  end if;
  return new;
end $$;

-- Only the columns the live checks and UserInfo read (src/oidc/access-token/repo.ts).
create trigger users_live_state_update after update on users for each row
  when ((old.status, old.security_version, old.email, old.email_verified, old.name, old.locale, old.updated_at, old.environment_id)
    is distinct from (new.status, new.security_version, new.email, new.email_verified, new.name, new.locale, new.updated_at, new.environment_id))
  execute function notify_live_state_user();

create trigger users_live_state_delete after delete on users for each row execute function notify_live_state_user();

-- A session's expiry moving LATER (every refresh and code exchange renews it) is not announced:
-- NOTIFY serialises the commits that send one, and a remembered earlier expiry is never
-- trusted once it has passed (the memory reads the row again then). Revocation, an earlier
-- expiry or another owner is announced.
create trigger login_sessions_live_state_update after update on login_sessions for each row
  when (old.revoked_at is distinct from new.revoked_at or old.idle_expires_at > new.idle_expires_at
    or old.absolute_expires_at > new.absolute_expires_at
    or (old.user_id, old.environment_id) is distinct from (new.user_id, new.environment_id))
  execute function notify_live_state_session();

create trigger login_sessions_live_state_delete after delete on login_sessions for each row execute function notify_live_state_session();

-- Introspection authenticates its caller against a remembered client row: any change of a
-- client (secret, method, status, deletion) is announced as 'client <id>' (ids are unique).
create or replace function notify_live_state_client() returns trigger language plpgsql as $$
begin
  perform pg_notify('live_state', 'client ' || coalesce(new.id, old.id));
  return coalesce(new, old);
end $$;

create trigger clients_live_state after update or delete on clients for each row execute function notify_live_state_client();
