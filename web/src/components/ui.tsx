import { Link } from 'react-router-dom';
import type { ReactNode } from 'react';
import type { ApiError } from '../api.js';
import type { LastRun } from '../types.js';

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge status-${status}`}>{status.replace('_', ' ')}</span>;
}

export function ModeBadge({ mode }: { mode: string }) {
  return <span className={`badge mode mode-${mode}`}>{mode}</span>;
}

/** The last runs of a job, oldest on the left, each a link to its run page. */
export function RunStrip({ runs }: { runs: LastRun[] | null }) {
  const list = [...(runs ?? [])].reverse();
  if (list.length === 0) return <span className="muted">no runs yet</span>;
  return (
    <span className="strip" aria-label="Recent runs">
      {list.map((r) => (
        <Link
          key={r.id}
          to={`/runs/${r.id}`}
          className={`tick status-${r.status}`}
          title={`Run #${r.number}: ${r.status}`}
          aria-label={`Run #${r.number}: ${r.status}`}
        />
      ))}
    </span>
  );
}

export function Spinner({ label = 'Loading…' }: { label?: string }) {
  return (
    <div className="loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" /> {label}
    </div>
  );
}

export function ErrorBox({ error, onRetry }: { error: ApiError | null; onRetry?: () => void }) {
  if (!error) return null;
  return (
    <div className="error-box" role="alert">
      <strong>{error.message}</strong>
      {error.fields.length > 0 && (
        <ul>
          {error.fields.map((f) => (
            <li key={f.field}>
              <code>{f.field}</code> {f.message}
            </li>
          ))}
        </ul>
      )}
      <div className="error-meta">
        {error.code}
        {error.requestId ? ` · request ${error.requestId}` : ''}
        {onRetry && (
          <button type="button" className="link" onClick={onRetry}>
            Try again
          </button>
        )}
      </div>
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <h3>{title}</h3>
      {children}
    </div>
  );
}

export function Field({
  label,
  htmlFor,
  error,
  hint,
  children,
}: {
  label: string;
  htmlFor: string;
  error?: string | undefined;
  hint?: ReactNode;
  children: ReactNode;
}) {
  return (
    <div className={`field${error ? ' has-error' : ''}`}>
      <label htmlFor={htmlFor}>{label}</label>
      {children}
      {hint && !error && <div className="hint">{hint}</div>}
      {error && (
        <div className="field-error" id={`${htmlFor}-error`} role="alert">
          {error}
        </div>
      )}
    </div>
  );
}

/** A labelled on/off switch (a checkbox with the switch role, so keyboard and screen readers treat it as one). */
export function Toggle({
  checked,
  onChange,
  label,
  disabled,
}: {
  checked: boolean;
  onChange: (v: boolean) => void;
  label: string;
  disabled?: boolean;
}) {
  return (
    <label className="toggle">
      <input
        type="checkbox"
        role="switch"
        checked={checked}
        disabled={disabled}
        aria-label={label}
        onChange={(e) => onChange(e.target.checked)}
      />
      <span className="track" aria-hidden="true" />
    </label>
  );
}
