-- Which processes are running, and with which master keys (docs/master-key-rotation.md;
-- decisions: Production operation, "A rotation waits for every live process"). Every server,
-- worker and operator command records a row when its master key is checked at start (in the
-- same transaction, under the key-check row's lock) and beats every 5 s; a clean stop deletes
-- it. `master-key rotate` refuses while a process that beat within the last 120 s (by the
-- database's clock: liveness, not a rule of the spec) lacks the new key or the old one.
-- Key ids are the non-secret fingerprints sealed values carry (`v1.<key-id>....`).
create table process_heartbeats (
  process_id text primary key,
  kind text not null check (kind in ('server', 'worker', 'server+worker', 'cli')),
  host text not null,
  pid integer not null,
  master_key_id text not null,
  previous_master_key_id text,
  started_at timestamptz not null,
  beat_at timestamptz not null
);

create index process_heartbeats_beat on process_heartbeats (beat_at);

-- Set when a rotation completes: until then a start without MASTER_KEY_PREVIOUS is refused,
-- since Email OTP codes and social login states made under the old key (10 minutes at most)
-- verify only with it. Written from the operator command's Clock, compared with each
-- starting process's Clock.
alter table master_key_check add column old_key_needed_until timestamptz;
