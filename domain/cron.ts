// STUB: being implemented (cron parsing, next occurrence in an IANA zone, human description).
export class CronError extends Error {}
export function validateCron(_expr: string): string | null { return null; }
export function isValidTimezone(tz: string): boolean {
  try { new Intl.DateTimeFormat('en-US', { timeZone: tz }); return tz !== 'Local'; } catch { return false; }
}
export function nextOccurrence(_expr: string, _timezone: string, _after: number): number | null { return null; }
export function describeCron(expr: string): string { return expr; }
