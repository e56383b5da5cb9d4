-- Management user search (GET /v1/users?search=): a case-insensitive email prefix uses
-- users_env_email_prefix (sql/0004); a case-insensitive name substring uses this trigram
-- index. pg_trgm is a trusted extension (PostgreSQL 13+): a database owner may create it.
create extension if not exists pg_trgm;
create index users_name_trgm on users using gin (lower(name) gin_trgm_ops);
