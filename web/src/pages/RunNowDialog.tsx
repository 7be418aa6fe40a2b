import { useEffect, useRef, useState } from 'react';
import { useNavigate } from 'react-router-dom';
import { errorMessage } from '../../../domain/error-message.js';
import { ApiError, asApiError, call, client } from '../api.js';
import '../components/job-tabs.css';
import { ErrorBox } from '../components/ui.js';
import type { JobDto } from '../types.js';

type Input = NonNullable<JobDto['spec']['inputs']>[number];

/** A placeholder of the declared type, so the template is valid JSON a person only fills in. */
function placeholder(type: string): unknown {
  const t = type.trim().toLowerCase().replace(/\?$/, '');
  if (t.endsWith('[]') || /^(array|list)\b/.test(t)) return [];
  if (/^(int|integer|number|float|double)\b/.test(t)) return 0;
  if (/^(bool|boolean)\b/.test(t)) return false;
  if (/^(object|map|dict|record)\b/.test(t)) return {};
  return '';
}

/** The input template: every declared input with a placeholder of its type, in the declared order. */
export function inputTemplate(inputs: Input[]): string {
  if (inputs.length === 0) return '';
  return JSON.stringify(Object.fromEntries(inputs.map((i) => [i.name, placeholder(i.type)])), null, 2);
}

/** Where JSON.parse stopped, as line and column, from its message's character position when it gives one. */
function jsonProblem(text: string, err: unknown): string {
  const message = errorMessage(err);
  const at = /position (\d+)/.exec(message);
  if (!at) return message;
  const before = text.slice(0, Number(at[1]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return `${message.replace(/\s*\(line \d+ column \d+\)/, '')} (line ${line}, column ${column})`;
}

/**
 * Run now: a job without declared inputs starts at once; one with inputs (or "With input…") opens a dialog with an
 * input template built from the job's input spec. The input must be valid JSON before anything is sent, and the
 * declared inputs it leaves out are named (a run may still start without them: the spec does not mark inputs
 * required).
 */
export function RunNowDialog({ job }: { job: JobDto }) {
  const navigate = useNavigate();
  const dialog = useRef<HTMLDialogElement>(null);
  const inputs = job.spec.inputs ?? [];
  const [input, setInput] = useState(() => inputTemplate(inputs));
  const [instructions, setInstructions] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const [skipped, setSkipped] = useState(false);
  const [open, setOpen] = useState(false);

  useEffect(() => {
    const d = dialog.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);

  const parsed = (() => {
    if (!input.trim()) return { ok: true as const, value: undefined };
    try {
      return { ok: true as const, value: JSON.parse(input) as unknown };
    } catch (err) {
      return { ok: false as const, problem: jsonProblem(input, err) };
    }
  })();
  const missing =
    parsed.ok && typeof parsed.value === 'object' && parsed.value !== null && !Array.isArray(parsed.value)
      ? inputs.filter((i) => !(i.name in (parsed.value as Record<string, unknown>))).map((i) => i.name)
      : [];

  const start = async (withOptions: boolean) => {
    setError(null);
    setSkipped(false);
    const body: { input?: unknown; instructions?: string } = {};
    if (withOptions) {
      if (!parsed.ok) {
        setError(
          new ApiError(0, 'invalid_json', 'The input is not valid JSON, so the run was not started', [
            { field: 'input', code: 'invalid', message: parsed.problem },
          ]),
        );
        return;
      }
      if (parsed.value !== undefined) body.input = parsed.value;
      if (instructions.trim()) body.instructions = instructions.trim();
    }
    setBusy(true);
    try {
      const started = await call(client.POST('/api/jobs/{id}/runs', { params: { path: { id: job.id } }, body }));
      if (started.runId) {
        setOpen(false);
        navigate(`/runs/${started.runId}`);
      } else setSkipped(true);
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="run-now">
      <div className="button-group">
        <button
          type="button"
          className="primary"
          disabled={busy}
          onClick={() => (inputs.length > 0 ? setOpen(true) : void start(false))}
        >
          Run now
        </button>
        <button type="button" aria-haspopup="dialog" onClick={() => setOpen(true)}>
          With input…
        </button>
      </div>
      {skipped && !open && (
        <div className="notice" role="status">
          Skipped: a run is already under way and the job skips overlapping runs.
        </div>
      )}
      {error && !open && <ErrorBox error={error} />}
      <dialog
        ref={dialog}
        className="dialog"
        aria-labelledby="run-now-title"
        onClose={() => setOpen(false)}
        onCancel={() => setOpen(false)}
      >
        {open && (
          <form
            method="dialog"
            onSubmit={(e) => {
              e.preventDefault();
              void start(true);
            }}
          >
            <h2 id="run-now-title">Run {job.name}</h2>
            {inputs.length > 0 && (
              <div className="small">
                The job takes these inputs:
                <ul>
                  {inputs.map((i) => (
                    <li key={i.name}>
                      <code>{i.name}</code> <span className="muted">({i.type})</span>
                      {i.description ? `: ${i.description}` : ''}
                    </li>
                  ))}
                </ul>
              </div>
            )}
            <label htmlFor="run-input">Input (JSON)</label>
            <textarea
              id="run-input"
              rows={Math.min(14, Math.max(5, input.split('\n').length + 1))}
              value={input}
              spellCheck={false}
              placeholder='{"city": "Berlin"}'
              onChange={(e) => {
                setInput(e.target.value);
                if (error?.field('input')) setError(null);
              }}
              aria-invalid={!parsed.ok}
              aria-describedby="run-input-state"
            />
            <div
              id="run-input-state"
              className={parsed.ok ? 'hint' : 'field-error'}
              role={parsed.ok ? undefined : 'alert'}
            >
              {!parsed.ok
                ? `Not valid JSON: ${parsed.problem}`
                : missing.length > 0
                  ? `Valid JSON; it leaves out ${missing.join(', ')}.`
                  : input.trim()
                    ? 'Valid JSON.'
                    : 'No input: the run starts without /svc/input.json.'}
            </div>
            <label htmlFor="run-instructions">Extra instructions for this run</label>
            <textarea
              id="run-instructions"
              rows={3}
              value={instructions}
              maxLength={10000}
              onChange={(e) => setInstructions(e.target.value)}
            />
            {error && <ErrorBox error={error} />}
            {skipped && (
              <div className="notice" role="status">
                Skipped: a run is already under way and the job skips overlapping runs.
              </div>
            )}
            <div className="form-actions">
              <button type="submit" className="primary" disabled={busy}>
                Start run
              </button>
              <button type="button" className="ghost" onClick={() => setOpen(false)}>
                Close
              </button>
              {inputs.length > 0 && (
                <button type="button" className="ghost" onClick={() => setInput(inputTemplate(inputs))}>
                  Reset to the template
                </button>
              )}
            </div>
          </form>
        )}
      </dialog>
    </div>
  );
}
