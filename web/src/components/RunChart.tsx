import { useState } from 'react';
import { Link } from 'react-router-dom';
import type { Schemas } from '../api.js';
import { cost, dateTime, duration } from '../format.js';

type Stats = Schemas['JobStatsOutputBody'];
type Metric = 'cost' | 'duration';

const width = 640;
const height = 180;
const pad = { left: 8, right: 8, top: 12, bottom: 18 };

/**
 * Cost or duration per run, oldest left, each bar a link to its run and coloured by its status; a dashed line marks
 * where a new playbook version took over, so a falling cost can be read against what the job learned. Loaded on
 * demand with the job page's overview, never with the jobs list (docs/performance.md, "Web app budgets").
 */
export default function RunChart({ stats }: { stats: Stats }) {
  const [metric, setMetric] = useState<Metric>('cost');
  const runs = stats.runs;
  if (runs.length === 0) return <p className="muted">No runs in the last 30 days to chart.</p>;
  const valueOf = (r: Stats['runs'][number]) => (metric === 'cost' ? r.cost : (r.msTotal ?? 0));
  const max = Math.max(1, ...runs.map(valueOf));
  const slot = (width - pad.left - pad.right) / runs.length;
  const barWidth = Math.max(1, Math.min(24, slot * 0.7));
  const plot = height - pad.top - pad.bottom;
  const x = (i: number) => pad.left + i * slot + (slot - barWidth) / 2;
  // A version's marker sits before the first run that ran it.
  const markers = stats.versions
    .map((v) => ({ v, at: runs.findIndex((r) => r.playbookVersion >= v.version) }))
    .filter((m) => m.at > 0);
  const show = (r: Stats['runs'][number]) => (metric === 'cost' ? cost(r.cost) : duration(r.msTotal));
  return (
    <figure className="run-chart">
      <figcaption>
        <span id="run-chart-title">
          {metric === 'cost' ? 'Cost' : 'Duration'} per run, last 30 days (highest{' '}
          {metric === 'cost' ? cost(max) : duration(max)})
        </span>
        <span role="radiogroup" aria-label="Chart shows" className="button-group">
          {(['cost', 'duration'] as const).map((m) => (
            <label key={m} className="small">
              <input type="radio" name="run-chart-metric" checked={metric === m} onChange={() => setMetric(m)} />{' '}
              {m === 'cost' ? 'Cost' : 'Duration'}
            </label>
          ))}
        </span>
      </figcaption>
      <svg viewBox={`0 0 ${width} ${height}`} role="group" aria-labelledby="run-chart-title" className="chart">
        <line className="axis" x1={pad.left} x2={width - pad.right} y1={height - pad.bottom} y2={height - pad.bottom} />
        {markers.map(({ v, at }) => (
          <g key={v.version} className="version-marker">
            <line
              x1={x(at) - (slot - barWidth) / 2}
              x2={x(at) - (slot - barWidth) / 2}
              y1={pad.top - 8}
              y2={height - pad.bottom}
            />
            <text x={x(at) - (slot - barWidth) / 2 + 3} y={pad.top} className="marker-label">
              v{v.version}
            </text>
          </g>
        ))}
        {runs.map((r, i) => {
          const h = Math.max(1, (valueOf(r) / max) * plot);
          return (
            <Link
              key={r.runId}
              to={`/runs/${r.runId}`}
              aria-label={`Run #${r.number}: ${show(r)}, ${r.status.replace('_', ' ')}, playbook v${r.playbookVersion}`}
            >
              <rect
                className={`bar status-${r.status}`}
                x={x(i)}
                y={height - pad.bottom - h}
                width={barWidth}
                height={h}
              >
                <title>{`#${r.number} · ${show(r)} · ${r.status} · ${dateTime(r.queuedAt)} · v${r.playbookVersion}`}</title>
              </rect>
            </Link>
          );
        })}
      </svg>
      {markers.length > 0 && (
        <p className="muted small">
          Dashed lines: a new playbook version ({markers.map((m) => `v${m.v.version} by ${m.v.author}`).join(', ')}).
        </p>
      )}
    </figure>
  );
}
