-- Webhook subscriptions, their delivery history (one row per attempt) and the worker
-- heartbeats that let a crashed worker's locked jobs be retried quickly.
-- Times come from the application's Clock, never from now().

create table webhooks (
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  url text not null,
  event_types text[] not null check (cardinality(event_types) >= 1),
  status text not null default 'active' check (status in ('active', 'disabled')),
  -- The signing secret, sealed (AES-256-GCM under MASTER_KEY, bound to this row).
  -- Cleared when the webhook is deleted.
  secret_sealed text,
  secret_rotated_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  -- DELETE is logical so delivery history keeps its webhook until the retention sweep.
  deleted_at timestamptz,
  version integer not null default 1
);
create index webhooks_environment_page on webhooks (environment_id, id) where deleted_at is null;
create index webhooks_workspace on webhooks (workspace_id, id) where deleted_at is null;
-- Fan-out: the active subscriptions of an Environment.
create index webhooks_fanout on webhooks (environment_id) where status = 'active' and deleted_at is null;

-- One row per send attempt (docs/architecture.md: pending = scheduled or in flight, failed = this attempt
-- failed and a retry is scheduled, delivered, exhausted). Never bodies or headers.
create table webhook_deliveries (
  id text primary key,
  workspace_id text not null,
  environment_id text not null,
  webhook_id text not null references webhooks(id),
  event_id text not null,
  event_type text not null,
  attempt integer not null check (attempt between 1 and 8),
  status text not null check (status in ('pending', 'delivered', 'failed', 'exhausted')),
  response_status_code integer,
  duration_ms integer,
  -- When the attempt was sent (while it is scheduled: when it is due).
  occurred_at timestamptz not null,
  -- The run_at given to its graphile-worker job (computed from the application Clock).
  scheduled_at timestamptz not null,
  -- Internal, for operators: timeout, connection_failed, blocked_address, webhook_disabled, ...
  failure_reason text,
  -- Exactly one record per (subscription, event, attempt number): a re-run of the fan-out
  -- or of an attempt can never create a duplicate attempt.
  unique (webhook_id, event_id, attempt)
);
create index webhook_deliveries_page on webhook_deliveries (webhook_id, occurred_at desc, id desc);
create index webhook_deliveries_retention on webhook_deliveries (occurred_at);

-- One row per worker process: the graphile-worker ids it runs and when it last beat.
-- A process that stops beating has its locked jobs released (force_unlock_workers).
create table worker_heartbeats (
  process_id text primary key,
  worker_ids text[] not null,
  beat_at timestamptz not null
);
create index worker_heartbeats_beat on worker_heartbeats (beat_at);
