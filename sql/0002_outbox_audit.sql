-- Domain events are appended to this outbox inside the transaction of the change they
-- report; the webhook fan-out reads from it.
create table event_outbox (
  id text primary key,
  workspace_id text not null,
  environment_id text,
  type text not null,
  envelope jsonb not null,
  occurred_at timestamptz not null,
  seq bigint generated always as identity unique
);
create index event_outbox_environment on event_outbox (environment_id, seq);

-- Audit events are append-only: the database refuses UPDATE and DELETE.
create table audit_events (
  id text primary key,
  workspace_id text not null,
  environment_id text,
  actor_type text not null,
  actor_id text,
  action text not null,
  subject_type text,
  subject_id text,
  result text not null check (result in ('success', 'failure')),
  request_id text,
  details jsonb not null default '{}'::jsonb,
  created_at timestamptz not null
);
create index audit_events_env_page on audit_events (environment_id, created_at desc, id desc);
create index audit_events_ws_page on audit_events (workspace_id, created_at desc, id desc);
create index audit_events_env_action on audit_events (environment_id, action, created_at desc, id desc);
create index audit_events_env_subject on audit_events (environment_id, subject_type, subject_id, created_at desc, id desc);

create function audit_events_append_only() returns trigger language plpgsql as $$
begin
  raise exception 'audit_events is append-only' using errcode = 'insufficient_privilege';
end;
$$;

create trigger audit_events_no_update before update or delete on audit_events
  for each row execute function audit_events_append_only();
create trigger audit_events_no_truncate before truncate on audit_events
  for each statement execute function audit_events_append_only();
