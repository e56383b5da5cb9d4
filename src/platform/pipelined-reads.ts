import { Context } from "effect"
import type { SqlClient } from "effect/sql"

/**
 * A second Postgres client for the token endpoint's lock-free reads (the refresh's family, the
 * code exchange's code): two connections, each carrying up to 16 statements of concurrent
 * requests written together, so Postgres wakes once for many reads instead of once per read
 * (docs/decisions/performance.md, "Pipelined reads on the token endpoint").
 *
 * Only statements that never wait for a row lock may go through it: a statement pipelined
 * behind one that waits holds up every request sharing its connection, and the driver cannot
 * cancel one statement of a shared connection. Writes, transactions, `FOR UPDATE`, the
 * rate-limit counters and LISTEN stay on `SqlClient`. Each statement is bounded like the main
 * pool's (./bounded-pg-client.ts); interrupting a pipelined statement abandons its answer at
 * once, so the caller gets its 503 within the bound even from a frozen database.
 */
export class PipelinedReads extends Context.Service<PipelinedReads, SqlClient.SqlClient>()("platform/PipelinedReads") {}
