-- WebAuthn ceremony challenges (spec: Passkey (WebAuthn), rule 4: "a challenge can never be
-- reused, whether the attempt succeeded or failed"). Kept in Postgres so every replica sees
-- them (docs/architecture.md: nothing another replica needs lives in process memory).
--
-- One unconsumed challenge per ceremony context (a login transaction, or a /me session) and
-- ceremony: issuing new options replaces the previous challenge in place. The first verify
-- consumes it with one conditional UPDATE (`consumed_at is null`), committed on its own before
-- the response is checked, so two concurrent verifies can never both use it and a failed
-- attempt still burns it.
create table webauthn_challenges (
  -- `chl_` + 32 characters of [a-z2-7]
  id text primary key,
  workspace_id text not null references workspaces(id),
  environment_id text not null references environments(id),
  ceremony text not null check (ceremony in ('registration', 'authentication')),
  -- `txn:<transaction id>` or `ses:<login session id>`: who may answer the challenge
  context_key text not null,
  transaction_id text,
  session_id text,
  -- the client the ceremony runs for (Android apk-key-hash origins, native rp_id rules)
  client_id text,
  -- registration: the user being given a passkey; authentication: unknown until verify
  user_id text references users(id),
  -- the RP ID chosen for this ceremony (active, legacy or a native app's)
  rp_id text not null,
  -- SHA-256 (hex) of the base64url challenge sent to the client
  challenge_hash text not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  consumed_at timestamptz
);
create unique index webauthn_challenges_one_open on webauthn_challenges (environment_id, context_key, ceremony)
  where consumed_at is null;
create index webauthn_challenges_expiry on webauthn_challenges (expires_at);
