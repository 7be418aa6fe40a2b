import { useState, type FormEvent } from 'react';
import { asApiError, call, client, type ApiError, type Schemas } from '../api.js';
import { ErrorBox } from './ui.js';

export type CompiledJob = Schemas['CompileOutputBody'];

/**
 * A sentence in, a proposed job out (nothing saved): the proposal fills the form below it, where it can be edited.
 * A failed compile (no utility model, a model error) leaves the plain form to fill by hand.
 */
export function CompileBox({ onCompiled }: { onCompiled: (job: CompiledJob) => void }) {
  const [sentence, setSentence] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const compile = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onCompiled(await call(client.POST('/api/jobs/compile', { body: { instruction: sentence } })));
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="card compile" onSubmit={(e) => void compile(e)}>
      <label htmlFor="compile-sentence">
        <strong>Describe the job in a sentence</strong>
      </label>
      <textarea
        id="compile-sentence"
        rows={3}
        maxLength={20000}
        value={sentence}
        placeholder="Every weekday at 7:00 Europe/Berlin, summarise the open issues of example.org and post them to team-chat"
        onChange={(e) => setSentence(e.target.value)}
      />
      <div className="form-actions">
        <button type="submit" disabled={busy || sentence.trim() === ''}>
          {busy ? 'Compiling…' : 'Compile into a job'}
        </button>
        {busy && <span className="spinner small" aria-hidden="true" />}
      </div>
      {error && (
        <>
          <ErrorBox error={error} />
          <p className="muted small">Fill in the form below by hand instead.</p>
        </>
      )}
    </form>
  );
}

/** What the compiler proposed beyond the form's fields: schedule in words, MCP needs, warnings. */
export function CompiledNotes({ job }: { job: CompiledJob }) {
  return (
    <div className="notice compiled" role="status">
      <strong>Proposed from your sentence.</strong> Check the fields, then save.
      {job.scheduleHuman && (
        <div>
          Schedule: {job.scheduleHuman}
          {job.timezone ? ` (${job.timezone})` : ''}
        </div>
      )}
      {job.mcp.length > 0 && (
        <div>
          MCP servers it needs:
          <ul>
            {job.mcp.map((m) => (
              <li key={m.server}>
                <strong>{m.server}</strong>: {m.why}{' '}
                {m.serverId ? (
                  <span className="badge status-succeeded">configured</span>
                ) : (
                  <span className="badge status-failed">not configured</span>
                )}
              </li>
            ))}
          </ul>
        </div>
      )}
      {job.warnings.length > 0 && (
        <ul className="warnings">
          {job.warnings.map((w) => (
            <li key={w}>{w}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
