-- Master-key rotation that completes (docs/master-key-rotation.md).
-- `previous_check_value` is set while a rotation is under way (the first start with
-- MASTER_KEY=<new> MASTER_KEY_PREVIOUS=<old>) and cleared by `cli master-key rotate` once
-- nothing sealed under the old key remains: until then a start without the old key is refused.
alter table master_key_check add column previous_check_value text;

-- Progress of the re-sealing, per target key and sealed column: the command works in batches
-- ordered by `last_row`, records where it stopped, and resumes there when run again.
create table master_key_rotation_progress (
  to_key_id text not null,
  sealed_column text not null,
  last_row text not null default '',
  resealed bigint not null default 0,
  completed_at timestamptz,
  updated_at timestamptz not null,
  primary key (to_key_id, sealed_column)
);
