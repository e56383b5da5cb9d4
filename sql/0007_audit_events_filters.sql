-- GET /v1/audit-events filters that sql/0002's indexes do not lead with: subject_id alone and
-- actor_type. Column order = the listing's sort order (created_at desc, id desc), so a
-- filtered page is an index range scan that stops after `limit` rows.
create index audit_events_env_subject_id on audit_events (environment_id, subject_id, created_at desc, id desc)
  where subject_id is not null;
create index audit_events_env_actor on audit_events (environment_id, actor_type, created_at desc, id desc);
