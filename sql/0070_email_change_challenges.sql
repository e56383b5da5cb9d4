-- Email change challenges (spec: Self-service /me, email change; /me rule 3) reuse the Email
-- OTP challenge table: a challenge belongs either to a login transaction (purpose `login`)
-- or to a user changing their address (`email_change_old`: the code goes to the current
-- address; `email_change_new`: the code goes to the new one).
alter table email_challenges alter column transaction_id drop not null;
alter table email_challenges add column user_id text references users(id);
-- the address the user asked for; carried from the old-address stage to the new-address one
alter table email_challenges add column new_email text;
alter table email_challenges drop constraint email_challenges_purpose_check;
alter table email_challenges add constraint email_challenges_purpose_check
  check (purpose in ('login', 'email_change_old', 'email_change_new'));
alter table email_challenges add constraint email_challenges_owner_check check (
  (purpose = 'login' and transaction_id is not null)
  or (purpose <> 'login' and user_id is not null and new_email is not null));
-- "One valid code per Environment + email + purpose" stays the login rule. An email change
-- has one active challenge per user (either stage): two users may each hold a code for the
-- same new address, and the switch decides which of them gets it (docs/decisions/me.md).
drop index email_challenges_one_active;
create unique index email_challenges_one_active on email_challenges (environment_id, email_normalized, purpose)
  where status = 'active' and purpose = 'login';
create unique index email_challenges_one_email_change on email_challenges (environment_id, user_id)
  where status = 'active' and purpose <> 'login';
