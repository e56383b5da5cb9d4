#!/usr/bin/env bash
# What Postgres alone can do of a refresh's writes on this machine (issue 13): pgbench (a C client,
# 32 connections, prepared statements) runs one statement shaped like our rotation (update the
# family row, insert the token row, update the session row, insert an outbox row) on its own
# scratch database, with nothing else in the request: no HTTP, no signing, no Node. It is the
# ceiling any server persisting every rotation in this Postgres could reach, to read beside
# bench/oidc-vs-oidc-provider.ts.
#
# Run: bash bench/rotation-floor.sh   (not part of the suite; needs pgbench, e.g. Debian's
# postgresql-client; PGHOST/PGPORT/PGUSER as for psql, default the local server on 127.0.0.1:5432)
# Knobs: FLOOR_SECONDS (15), FLOOR_CLIENTS (32).
set -euo pipefail
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
PGBENCH="$(command -v pgbench || ls /usr/lib/postgresql/*/bin/pgbench 2>/dev/null | tail -1)"
[ -x "$PGBENCH" ] || { echo "pgbench not found" >&2; exit 1; }
DB="rotation_floor_$$"
WORK="$(mktemp -d)"
trap 'psql -qc "drop database if exists $DB" postgres >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT

psql -qc "create database $DB" postgres
psql -q "$DB" <<'SQL'
create table fam (id int primary key, gen int not null, last_used timestamptz, grace text);
create table tok (fam int, gen int, hash text, issued timestamptz, primary key (fam, gen));
create table ses (id int primary key, last_active timestamptz);
create table outbox (id bigserial primary key, type text, payload jsonb, created timestamptz default now());
alter table fam set (fillfactor = 50);
insert into fam select g, 1, now(), null from generate_series(1, 100000) g;
insert into ses select g, now() from generate_series(1, 100000) g;
SQL
cat > "$WORK/rotate.sql" <<'SQL'
\set f random(1, 100000)
with f as (update fam set gen = gen + 1, last_used = now(), grace = repeat('x', 1500) where id = (:f)::int returning id, gen),
t as (insert into tok select id, gen, md5(random()::text), now() from f),
s as (update ses set last_active = now() where id = (:f)::int and exists (select 1 from f)),
o as (insert into outbox (type, payload) select 'login.succeeded', jsonb_build_object('user', (:f)::int) from f)
select count(*) from f;
SQL
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PGBENCH" -n -M prepared -c "${FLOOR_CLIENTS:-32}" -j 2 -T "${FLOOR_SECONDS:-15}" -f "$WORK/rotate.sql" "$DB" 2>&1 \
  | grep -E "^(tps|latency average|number of transactions actually processed)"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
