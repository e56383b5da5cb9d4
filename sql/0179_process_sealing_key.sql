-- The master key a process seals and makes HMACs under (its key id), written at each heartbeat
-- (docs/master-key-rotation.md, expand/contract; decisions: Production operation, "A rotation
-- never breaks the running service"). A process holding both keys seals under the old one until
-- `master-key rotate` records the switch, then under the new one: this column is its
-- acknowledgement, and the rotation re-seals nothing until every live process shows the new key.
-- Nullable: a process of an earlier version, still beating during an upgrade, does not write it
-- (and so never counts as having switched).
alter table process_heartbeats add column sealing_key_id text;
