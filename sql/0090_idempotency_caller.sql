-- docs/decisions/rate-limits-and-caches.md: an idempotency record belongs to the credential that made it (an API key or a
-- Dashboard user), not to the whole Workspace: another caller who learns or guesses the
-- Idempotency-Key value must never receive the stored answer (a secret, for key creation
-- and rotations). Records made before this change are bound to nobody, so they are dropped
-- (a retry of such a request runs again; they would have expired within 24 hours anyway).
delete from idempotency_keys;
alter table idempotency_keys add column caller text not null;
alter table idempotency_keys drop constraint idempotency_keys_pkey;
alter table idempotency_keys add primary key (workspace_id, caller, key);
