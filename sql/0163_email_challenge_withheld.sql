-- Strangers cannot keep killing someone's Email OTP code (docs/decisions/security-hardening.md: "Email OTP: who may
-- change the one valid code"). `issued_from` is an HMAC of the client address (IPv4, IPv6 /64)
-- that started or last renewed the challenge, bound to Environment + email (no IP is kept, and
-- rows of two emails cannot be linked by it); NULL on rows made before this migration.
-- A `withheld` challenge is a start or resend that was not allowed to change the email's one
-- valid code: it got no code of its own and no mail, and verifies against the email's active
-- code (the one already mailed to that address). It is not the email's active code, so
-- "one valid code at a time per Environment + email + purpose" (email_challenges_one_active) holds.
alter table email_challenges add column issued_from text;
alter table email_challenges drop constraint email_challenges_status_check;
alter table email_challenges add constraint email_challenges_status_check
  check (status in ('active', 'withheld', 'verified', 'invalidated', 'superseded', 'consumed'));
-- The open challenges of one email (active and withheld), read under the email's lock.
create index email_challenges_open on email_challenges (environment_id, email_normalized, purpose)
  where status in ('active', 'withheld');
