export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function summarize(samples: number[]): { n: number; p50: number; p99: number; max: number } {
  const s = [...samples].sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return {
    n: s.length,
    p50: round(percentile(s, 50)),
    p99: round(percentile(s, 99)),
    max: round(s[s.length - 1] ?? NaN),
  };
}
