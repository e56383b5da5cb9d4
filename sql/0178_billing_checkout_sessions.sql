-- Checkout sessions this service opened, each for one Workspace and its recorded Stripe
-- customer (src/billing). A `checkout.session.completed` event is applied only to the
-- Workspace that opened the session, and only when it names that customer: a completion of
-- any other session (a Payment Link or pricing table on the same Stripe account, whose
-- `client_reference_id` the payer chooses) changes nothing (decisions, "Stripe webhook").
create table billing_checkout_sessions (
  id text primary key,
  workspace_id text not null references workspaces(id),
  stripe_customer_id text not null,
  created_at timestamptz not null,
  expires_at timestamptz not null
);
create index billing_checkout_sessions_expires on billing_checkout_sessions (expires_at);
