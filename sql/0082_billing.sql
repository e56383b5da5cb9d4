-- Billing (spec: POST /billing/checkout-session, /billing/portal-session; src/billing).
-- One Stripe customer per Workspace, created on first use and kept; the subscription state
-- is driven by Stripe's webhook. Times come from the application's Clock or from Stripe's
-- event `created`, never from now().
create table workspace_billing (
  workspace_id text primary key references workspaces(id),
  stripe_customer_id text unique,
  subscription_id text,
  -- Stripe's subscription status (active, trialing, past_due, unpaid, canceled, incomplete, ...)
  subscription_status text,
  -- the first payment failure not yet made good: the grace period runs from here
  past_due_since timestamptz,
  -- `created` of the newest Stripe event applied (older events never overwrite newer state)
  last_event_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null
);

-- Stripe events already applied (Stripe delivers at least once): deduplicated by id.
create table stripe_events (
  id text primary key,
  type text not null,
  workspace_id text,
  received_at timestamptz not null
);
create index stripe_events_received on stripe_events (received_at);
