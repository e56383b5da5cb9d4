-- A social login whose provider did not verify the address (Microsoft without `xms_edov`, a
-- generic OIDC provider answering `email_verified: false`, ...) creates no account and links
-- to none until the address is proven by an Email OTP on the same transaction
-- (docs/decisions/social-login.md, Social login: "An unverified provider address"). Such a pending link has
-- no user yet (`user_id` null: the proof is of the address itself), and keeps the profile the
-- account will be created with once the code is verified.
alter table social_pending_links alter column user_id drop not null;
alter table social_pending_links add column name text;
alter table social_pending_links add column avatar_url text;
alter table social_pending_links add column locale text;
-- Either an existing account to prove, or an address to prove.
alter table social_pending_links add constraint social_pending_links_proof check (user_id is not null or email is not null);
