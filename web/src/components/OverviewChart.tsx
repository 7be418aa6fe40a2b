import { useEffect, useState } from 'react';
import { cost } from '../format.js';
import { bucketLabel, bucketStatuses, bucketTotal, type Overview } from '../overview.js';

const height = 200;
const pad = { left: 30, right: 8, top: 10, bottom: 22 };

/**
 * The width the chart has on screen, in CSS pixels: the SVG is drawn at that size rather than scaled, so its labels
 * keep their size on a phone and on a wide screen alike.
 */
function useWidth(box: HTMLElement | null): number {
  const [width, setWidth] = useState(640);
  useEffect(() => {
    if (!box) return;
    const observer = new ResizeObserver(([entry]) => {
      if (entry) setWidth(Math.max(240, Math.round(entry.contentRect.width)));
    });
    observer.observe(box);
    return () => observer.disconnect();
  }, [box]);
  return width;
}

/**
 * Runs per hour (24 hours) or per UTC day, stacked by status, oldest left. The bars are a picture for the eye; the
 * same counts are a table under "Show as a table" for a screen reader or a keyboard. Loaded on demand with the
 * dashboard, like the job chart (docs/performance.md, "Web app budgets").
 */
export default function OverviewChart({ overview }: { overview: Overview }) {
  const [box, setBox] = useState<HTMLDivElement | null>(null);
  const width = useWidth(box);
  const buckets = overview.perDay;
  const unit = overview.bucket === 'hour' ? 'hour' : 'day';
  const max = Math.max(1, ...buckets.map(bucketTotal));
  const slot = (width - pad.left - pad.right) / Math.max(1, buckets.length);
  const barWidth = Math.max(1, Math.min(28, slot * 0.72));
  const plot = height - pad.top - pad.bottom;
  const base = height - pad.bottom;
  const x = (i: number) => pad.left + i * slot + (slot - barWidth) / 2;
  // As many axis labels as fit (about 80 px each), counted back from the present bucket so that it is always named.
  const every = Math.max(1, Math.ceil(buckets.length / Math.max(2, Math.floor(width / 80))));
  const labelled = (i: number) => (buckets.length - 1 - i) % every === 0;
  const total = buckets.reduce((sum, b) => sum + bucketTotal(b), 0);
  const title = `Runs per ${unit} by status`;
  return (
    <figure className="overview-chart">
      <figcaption id="overview-chart-title">
        {title}{' '}
        <span className="muted small">
          (highest {max} in one {unit})
        </span>
      </figcaption>
      <ul className="legend" aria-label="Statuses">
        {bucketStatuses.map((s) => (
          <li key={s.key}>
            <span className={`swatch seg-${s.key}`} aria-hidden="true" /> {s.label}
          </li>
        ))}
      </ul>
      <div ref={setBox} className="chart-box">
        <svg
          width={width}
          height={height}
          viewBox={`0 0 ${width} ${height}`}
          role="img"
          aria-labelledby="overview-chart-title"
          aria-describedby="overview-chart-summary"
          className="chart"
        >
          <line className="axis" x1={pad.left} x2={width - pad.right} y1={base} y2={base} />
          <text className="axis-label" x={pad.left - 4} y={pad.top + 4} textAnchor="end">
            {max}
          </text>
          <text className="axis-label" x={pad.left - 4} y={base} textAnchor="end">
            0
          </text>
          {buckets.map((b, i) => {
            let y = base;
            const n = bucketTotal(b);
            return (
              <g key={b.day} className="bucket">
                <title>
                  {`${bucketLabel(b.day, overview.bucket, true)}: ${n} run${n === 1 ? '' : 's'}`}
                  {bucketStatuses
                    .filter((s) => b[s.key] > 0)
                    .map((s) => `, ${b[s.key]} ${s.label.toLowerCase()}`)
                    .join('')}
                  {b.cost > 0 ? ` · ${cost(b.cost)}` : ''}
                </title>
                {/* An invisible full-height target, so a thin or empty bar still shows its tooltip. */}
                <rect className="hover-target" x={pad.left + i * slot} y={pad.top} width={slot} height={plot} />
                {bucketStatuses.map((s) => {
                  const count = b[s.key];
                  if (count === 0) return null;
                  const h = (count / max) * plot;
                  y -= h;
                  return <rect key={s.key} className={`seg seg-${s.key}`} x={x(i)} y={y} width={barWidth} height={h} />;
                })}
                {labelled(i) && (
                  <text className="axis-label" x={x(i) + barWidth / 2} y={height - 6} textAnchor="middle">
                    {bucketLabel(b.day, overview.bucket)}
                  </text>
                )}
              </g>
            );
          })}
        </svg>
      </div>
      <p id="overview-chart-summary" className="sr-only">
        {total} runs in {buckets.length} {unit}s; the table below lists them {unit} by {unit}.
      </p>
      <details className="chart-table">
        <summary>Show as a table</summary>
        <div className="table-scroll">
          <table aria-label={`Runs per ${unit}`}>
            <thead>
              <tr>
                <th scope="col">{unit === 'hour' ? 'Hour' : 'Day (UTC)'}</th>
                {bucketStatuses.map((s) => (
                  <th key={s.key} scope="col" className="num">
                    {s.label}
                  </th>
                ))}
                <th scope="col" className="num">
                  Cost
                </th>
              </tr>
            </thead>
            <tbody>
              {buckets.map((b) => (
                <tr key={b.day}>
                  <th scope="row">{bucketLabel(b.day, overview.bucket, true)}</th>
                  {bucketStatuses.map((s) => (
                    <td key={s.key} className="num" data-label={s.label}>
                      {b[s.key]}
                    </td>
                  ))}
                  <td className="num" data-label="Cost">
                    {cost(b.cost)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
