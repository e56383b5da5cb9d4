-- docs/decisions/performance.md: a refresh rotates its family row and renews its login session's row. Those updates
-- were never HOT (heap-only): each changed an indexed column (the family's grace_until and sealed
-- response, the session's idle_expires_at), so every rotation added a new entry to every index of
-- both tables, and a family refreshed often left a chain of dead versions behind it that each
-- later lookup walked until autovacuum came (measured: 25,000 dead versions for 257 live families
-- after 30 s of refreshes; the rotation statement then cost 0.54 ms of Postgres time).
--
-- Now nothing a rotation changes is indexed at full precision: the sweeps that look rows up by
-- time use a coarse bucket of that time (a stored generated column, so every writer keeps it
-- right without knowing of it), which a rotation leaves unchanged unless it crosses a bucket
-- boundary. The sweeps compare the bucket first (index) and the exact time second.
-- A lower fillfactor keeps room on each page for the next version, so the update stays on its
-- page and the page prunes the dead versions itself, without waiting for VACUUM.
-- Adding a stored generated column rewrites the table once (ACCESS EXCLUSIVE while it runs).

-- Indexes no query uses (nothing looks families or sessions up by Environment and idle expiry).
drop index refresh_families_env_expiry;
drop index login_sessions_env_expiry;

-- The grace purge (housekeeping, every 5 minutes) finds sealed responses by the minute their
-- window ends; the column is null exactly when grace_until is (no sealed response).
drop index refresh_families_grace;
alter table refresh_families add column grace_until_minute bigint generated always as
  (floor(extract(epoch from (grace_until - timestamptz '1970-01-01 00:00:00+00')) / 60)::bigint) stored;
create index refresh_families_grace_minute on refresh_families (grace_until_minute) where grace_until_minute is not null;
alter table refresh_families set (fillfactor = 50);

-- The session expiry sweep finds sessions past idle expiry by its hour (a refresh renews the idle
-- expiry each time; the absolute expiry it stretches only once, to the family's).
drop index login_sessions_idle_expiry;
alter table login_sessions add column idle_expires_hour bigint generated always as
  (floor(extract(epoch from (idle_expires_at - timestamptz '1970-01-01 00:00:00+00')) / 3600)::bigint) stored;
create index login_sessions_idle_hour on login_sessions (idle_expires_hour) where revoked_at is null;
alter table login_sessions set (fillfactor = 80);
