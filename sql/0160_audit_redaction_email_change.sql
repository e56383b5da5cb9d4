-- After review (docs/decisions/billing-bounces-retention.md). The purge's redaction (sql/0081) also removes the masked addresses of
-- email changes (`masked_old_email`, `masked_new_email`, src/me/email-change): the narrow
-- exception to append-only now lists these five keys; nothing else changed.
create or replace function audit_events_append_only() returns trigger language plpgsql as $$
begin
  if tg_op = 'UPDATE'
    and coalesce(current_setting('authservice.audit_redaction', true), '') = 'on'
    and (new.id, new.workspace_id, new.environment_id, new.actor_type, new.actor_id, new.action, new.subject_type,
         new.subject_id, new.result, new.request_id, new.created_at)
      is not distinct from
        (old.id, old.workspace_id, old.environment_id, old.actor_type, old.actor_id, old.action, old.subject_type,
         old.subject_id, old.result, old.request_id, old.created_at)
    and new.details = (old.details - array['masked_email', 'masked_old_email', 'masked_new_email', 'note', 'reason'])
      || '{"personal_data_redacted": true}'::jsonb
  then
    return new;
  end if;
  raise exception 'audit_events is append-only' using errcode = 'insufficient_privilege';
end;
$$;

-- Email change challenges carry the user's id but another address: the purge deletes them by
-- user (src/users/purge/repo.ts), and housekeeping by age (src/me/email-change/housekeeping.ts).
create index email_challenges_user on email_challenges (user_id) where user_id is not null;
