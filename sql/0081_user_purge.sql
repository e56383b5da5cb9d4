-- Purge of users pending deletion (src/users/purge). Audit events stay append-only with ONE
-- narrow exception: the purge may redact the personal parts of an audit record's `details`
-- (the keys listed below: a masked email, a free-text note or reason), marking the record
-- `personal_data_redacted`, inside a transaction that set `authservice.audit_redaction`.
-- Nothing else of an audit record can ever change, and records are never deleted.
create or replace function audit_events_append_only() returns trigger language plpgsql as $$
begin
  if tg_op = 'UPDATE'
    and coalesce(current_setting('authservice.audit_redaction', true), '') = 'on'
    and (new.id, new.workspace_id, new.environment_id, new.actor_type, new.actor_id, new.action, new.subject_type,
         new.subject_id, new.result, new.request_id, new.created_at)
      is not distinct from
        (old.id, old.workspace_id, old.environment_id, old.actor_type, old.actor_id, old.action, old.subject_type,
         old.subject_id, old.result, old.request_id, old.created_at)
    and new.details = (old.details - array['masked_email', 'note', 'reason']) || '{"personal_data_redacted": true}'::jsonb
  then
    return new;
  end if;
  raise exception 'audit_events is append-only' using errcode = 'insufficient_privilege';
end;
$$;

-- The purge finds due users by deletion time.
create index users_pending_deletion on users (deleted_at) where status = 'pending_deletion';
