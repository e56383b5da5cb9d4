/**
 * Spec, Limits: "Free tier 30,000 MAU; thresholds 80, 95, 100 percent". A Workspace's MAU
 * is counted per UTC calendar month (the billing month, `YYYY-MM`).
 */
export const FREE_TIER_MAU = 30_000
export const THRESHOLD_PERCENTS = [80, 95, 100] as const
export type ThresholdPercent = (typeof THRESHOLD_PERCENTS)[number]

/**
 * Once the Workspace reaches 100 % of the free tier in a month, it is in a grace period for
 * this long (docs/decisions/billing-bounces-retention.md). A self-hosted install has no payment provider: the state is
 * reported, nothing is blocked.
 */
export const GRACE_PERIOD_MS = 7 * 24 * 3600_000

/** The MAU at which a threshold is reached: ceil(limit x percent / 100). */
export const thresholdMau = (percent: ThresholdPercent, limit: number = FREE_TIER_MAU) =>
  Math.ceil((limit * percent) / 100)

/** The thresholds a Workspace MAU has reached. */
export const reachedThresholds = (mau: number, limit: number = FREE_TIER_MAU): ReadonlyArray<ThresholdPercent> =>
  THRESHOLD_PERCENTS.filter((p) => mau >= thresholdMau(p, limit))

export const BILLING_MONTH_PATTERN = /^(\d{4})-(0[1-9]|1[0-2])$/

/** The UTC billing month of an instant: `2025-06`. */
export const billingMonthOf = (ms: number): string => new Date(ms).toISOString().slice(0, 7)

/** First instant of the month and first instant of the next one (UTC). */
export const monthBounds = (billingMonth: string): { readonly start: Date; readonly end: Date } => {
  const m = BILLING_MONTH_PATTERN.exec(billingMonth)
  if (!m) throw new Error(`not a billing month: ${billingMonth}`)
  const year = Number(m[1])
  const month = Number(m[2]) - 1
  return { start: new Date(Date.UTC(year, month, 1)), end: new Date(Date.UTC(year, month + 1, 1)) }
}
