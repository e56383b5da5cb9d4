-- The fan-out job of an event sends the event's pending first attempts (and finds them again
-- when it is re-run after a crash): a small index over the pending records only.
create index webhook_deliveries_pending_event on webhook_deliveries (event_id) where status = 'pending';
