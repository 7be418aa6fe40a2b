/** The workspace's daily spend cap (docs/models.md, "Settings"). Costs are micro-USD, the limit is in dollars. */

/** 00:00 UTC of the day `now` falls in: the cap counts runs queued since then. */
export function utcDayStart(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
}

/** The error that stops a run before any sandbox or model cost, or null when the run may go on (0 means no cap). */
export function dailySpendError(limitUsd: number, spentMicroUsd: number): string | null {
  if (!(limitUsd > 0)) return null;
  if (spentMicroUsd < Math.round(limitUsd * 1e6)) return null;
  return `The workspace reached its daily spend limit of $${limitUsd.toFixed(2)}`;
}
