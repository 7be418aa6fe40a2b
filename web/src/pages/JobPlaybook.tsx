import { useState } from 'react';
import { useSearchParams } from 'react-router-dom';
import { errorMessage } from '../../../domain/error-message.js';
import { ApiError, asApiError, call, client } from '../api.js';
import { CodeEditor } from '../components/CodeEditor.js';
import { scriptLanguage } from '../components/editor-language.js';
import { ErrorBox, Empty, ModeBadge, Spinner } from '../components/ui.js';
import { lineDiff } from '../diff.js';
import { dateTime } from '../format.js';
import { useApi } from '../hooks.js';
import type { Content, JobDto, JobPatch, PlaybookDto } from '../types.js';

/**
 * The playbook: the latest version or `?version=N`, with the versions, their diffs and rollback beside it; the mode
 * pin; and an editor (a form with code editors, or the content as JSON) that saves a new version. An edit carries the
 * version it started from, so one saved meanwhile answers 409: the edit is kept on screen with what changed, to be
 * saved on top of the newer version or dropped for it (docs/design.md, "Web app").
 */
export function PlaybookTab({ job, onJobChange }: { job: JobDto; onJobChange: () => void }) {
  const jobId = job.id;
  const [params, setParams] = useSearchParams();
  const version = params.get('version');
  const editing = params.get('edit');
  const current = useApi(`playbook ${jobId}`, (signal) =>
    call(client.GET('/api/jobs/{id}/playbook', { params: { path: { id: jobId } }, signal })),
  );
  const chosen = useApi(version !== null ? `playbook ${jobId} version ${version}` : null, (signal) =>
    call(
      client.GET('/api/jobs/{id}/playbook/versions/{version}', {
        params: { path: { id: jobId, version: Number(version) } },
        signal,
      }),
    ),
  );
  const versions = useApi(`playbook versions ${jobId}`, (signal) =>
    call(
      client.GET('/api/jobs/{id}/playbook/versions', {
        params: { path: { id: jobId }, query: { pageSize: 100 } },
        signal,
      }),
    ),
  );
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState('');
  const shown = version === null ? current : chosen;
  const data = shown.data;
  const latest = current.data?.version;

  const reloadAll = () => {
    current.reload();
    versions.reload();
    chosen.reload();
    onJobChange();
  };
  const rollback = async (to: number) => {
    if (!window.confirm(`Roll the playbook back to version ${to}? It is saved as a new version; nothing is lost.`))
      return;
    setError(null);
    try {
      const saved = await call(
        client.POST('/api/jobs/{id}/playbook/rollback', {
          params: { path: { id: jobId } },
          body: { version: to, ...(latest !== undefined ? { baseVersion: latest } : {}) },
        }),
      );
      setNotice(`Rolled back: version ${saved.version} has the content of version ${to}.`);
      setParams({});
      reloadAll();
    } catch (err) {
      setError(asApiError(err));
      reloadAll();
    }
  };
  const openEditor = (mode: 'form' | 'json') => {
    setNotice('');
    setParams({ edit: mode });
  };

  if (editing === 'form' || editing === 'json') {
    if (!current.data) return current.error ? <ErrorBox error={current.error} onRetry={current.reload} /> : <Spinner />;
    return (
      <PlaybookEditor
        key={current.data.jobId}
        jobId={jobId}
        start={current.data}
        mode={editing}
        onMode={(m) => setParams({ edit: m }, { replace: true })}
        onClose={(savedVersion) => {
          if (savedVersion !== null) setNotice(`Saved as version ${savedVersion}.`);
          setParams({});
          reloadAll();
        }}
      />
    );
  }

  return (
    <div className="playbook">
      <aside className="versions card" aria-label="Versions">
        <h2>Versions</h2>
        <ErrorBox error={versions.error} />
        {versions.data && versions.data.items.length === 0 && (
          <p className="muted">No versions yet: the job learns from its runs.</p>
        )}
        <ul>
          {versions.data?.items.map((v) => (
            <li key={v.version}>
              <button
                type="button"
                className={`link${String(v.version) === version || (version === null && data?.version === v.version) ? ' current' : ''}`}
                onClick={() => setParams({ version: String(v.version) })}
              >
                v{v.version}
              </button>{' '}
              <span className="muted small">
                {v.author ?? ''} · {dateTime(v.createdAt)}
              </span>
              {v.summary && <div className="small">{v.summary}</div>}
            </li>
          ))}
        </ul>
        {version !== null && (
          <button type="button" className="ghost" onClick={() => setParams({})}>
            Show the latest
          </button>
        )}
      </aside>
      <div className="playbook-body">
        {notice && (
          <div className="notice ok" role="status">
            {notice}
          </div>
        )}
        <ErrorBox error={error} />
        <ErrorBox error={shown.error} onRetry={shown.reload} />
        {!data && !shown.error && <Spinner />}
        {data && (
          <>
            <div className="playbook-head">
              <h2>
                Version {data.version}
                {data.version === latest && version !== null && <span className="muted small"> (the latest)</span>}
                {data.summary && <span className="muted small"> — {data.summary}</span>}
              </h2>
              <div className="actions">
                {version === null || Number(version) === latest ? (
                  <>
                    <button type="button" className="primary" onClick={() => openEditor('form')}>
                      Edit playbook
                    </button>
                    <button type="button" onClick={() => openEditor('json')}>
                      Edit as JSON
                    </button>
                  </>
                ) : (
                  <button type="button" onClick={() => void rollback(data.version)}>
                    Roll back to version {data.version}
                  </button>
                )}
              </div>
            </div>
            {version === null && <ModePin job={job} onChange={onJobChange} />}
            {current.data && version === null && (
              <p className="muted small">
                About {current.data.tokens.toLocaleString()} of {current.data.budget.toLocaleString()} tokens when
                rendered for a run.
              </p>
            )}
            {'previous' in data && data.previous && <Changes before={data.previous} after={data.content} />}
            <ContentView content={data.content} />
          </>
        )}
      </div>
    </div>
  );
}

const pinOf = (v: string): NonNullable<JobPatch['modePin']> =>
  v === 'explore' || v === 'assisted' || v === 'scripted' ? v : '';

/** Which mode the next run takes: the playbook decides unless a mode is pinned. */
function ModePin({ job, onChange }: { job: JobDto; onChange: () => void }) {
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  // '' unpins (the PATCH convention for clearing a field).
  const pin = async (modePin: NonNullable<JobPatch['modePin']>) => {
    setBusy(true);
    setError(null);
    try {
      await call(client.PATCH('/api/jobs/{id}', { params: { path: { id: job.id } }, body: { modePin } }));
      onChange();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="card">
      <div className="row">
        <label htmlFor="mode-pin">Mode of the next runs</label>
        <select
          id="mode-pin"
          value={job.modePin ?? ''}
          disabled={busy}
          onChange={(e) => void pin(pinOf(e.target.value))}
        >
          <option value="">Automatic (from the playbook)</option>
          <option value="explore">Pinned: explore</option>
          <option value="assisted">Pinned: assisted</option>
          <option value="scripted">Pinned: scripted</option>
        </select>
        <span>
          next run: <ModeBadge mode={job.nextMode} />
          {job.demoted && <span className="muted small"> (demoted after fallbacks)</span>}
        </span>
      </div>
      <ErrorBox error={error} />
    </div>
  );
}

// ---- The editor ----

/** A learning or script in the form; `key` keeps React rows stable while items are added and removed. */
interface LearningDraft {
  key: string;
  id: string | null;
  kind: string;
  text: string;
  when: string;
  status: 'active' | 'retired';
  sources: string[] | null;
}
interface ScriptDraft {
  key: string;
  name: string;
  content: string;
  sources: string[] | null;
}
interface Draft {
  learnings: LearningDraft[];
  toolkit: ScriptDraft[];
  setup: string;
  main: string;
  dockerfile: string;
  checks: string;
  llm: boolean;
  varies: string;
}

/** What PUT takes (the ContentInput schema); statistics are left out, the server keeps them beside the versions. */
interface ContentInput {
  learnings: Array<{
    id?: string;
    kind: string;
    text: string;
    when: string | null;
    status: 'active' | 'retired';
    sources?: string[] | null;
  }>;
  toolkit: Array<{ name: string; content: string; sources?: string[] | null }>;
  setup: string | null;
  main: string | null;
  dockerfile: string | null;
  verify: { checks: string[]; llm: boolean; varies: string[] } | null;
}

let keySeq = 0;
const newKey = () => `k${++keySeq}`;
const lines = (s: string) =>
  s
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
const orNull = (s: string) => (s.trim() === '' ? null : s);

function draftOf(c: Content): Draft {
  return {
    learnings: (c.learnings ?? []).map((l) => ({
      key: newKey(),
      id: l.id,
      kind: l.kind,
      text: l.text,
      when: l.when ?? '',
      status: l.status,
      sources: l.sources,
    })),
    toolkit: (c.toolkit ?? []).map((s) => ({ key: newKey(), name: s.name, content: s.content, sources: s.sources })),
    setup: c.setup ?? '',
    main: c.main ?? '',
    dockerfile: c.dockerfile ?? '',
    checks: (c.verify?.checks ?? []).join('\n'),
    llm: c.verify?.llm ?? false,
    varies: (c.verify?.varies ?? []).join('\n'),
  };
}

function inputOf(d: Draft): ContentInput {
  const checks = lines(d.checks);
  const varies = lines(d.varies);
  return {
    learnings: d.learnings.map((l) => ({
      ...(l.id ? { id: l.id } : {}),
      kind: l.kind,
      text: l.text,
      when: orNull(l.when),
      status: l.status,
      ...(l.sources ? { sources: l.sources } : {}),
    })),
    toolkit: d.toolkit.map((s) => ({ name: s.name, content: s.content, ...(s.sources ? { sources: s.sources } : {}) })),
    setup: orNull(d.setup),
    main: orNull(d.main),
    dockerfile: orNull(d.dockerfile),
    verify: checks.length === 0 && varies.length === 0 && !d.llm ? null : { checks, llm: d.llm, varies },
  };
}

/** Content sent as JSON, read back into the form; a value of the wrong shape is refused with what was wrong. */
function draftOfJson(value: unknown): Draft {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error('the content must be a JSON object such as {"learnings": [], "main": null}');
  const v = value as Record<string, unknown>;
  const text = (k: string) => (typeof v[k] === 'string' ? v[k] : '');
  const list = (k: string) => (Array.isArray(v[k]) ? (v[k] as Array<Record<string, unknown>>) : []);
  const str = (o: Record<string, unknown>, k: string) => (typeof o[k] === 'string' ? o[k] : '');
  const verify = (typeof v.verify === 'object' && v.verify !== null ? v.verify : {}) as Record<string, unknown>;
  const strings = (x: unknown) => (Array.isArray(x) ? x.filter((s): s is string => typeof s === 'string') : []);
  return {
    learnings: list('learnings').map((l) => ({
      key: newKey(),
      id: str(l, 'id') || null,
      kind: str(l, 'kind') || 'fact',
      text: str(l, 'text'),
      when: str(l, 'when'),
      status: l.status === 'retired' ? 'retired' : 'active',
      sources: Array.isArray(l.sources) ? strings(l.sources) : null,
    })),
    toolkit: list('toolkit').map((s) => ({
      key: newKey(),
      name: str(s, 'name'),
      content: str(s, 'content'),
      sources: Array.isArray(s.sources) ? strings(s.sources) : null,
    })),
    setup: text('setup'),
    main: text('main'),
    dockerfile: text('dockerfile'),
    checks: strings(verify.checks).join('\n'),
    llm: verify.llm === true,
    varies: strings(verify.varies).join('\n'),
  };
}

/** The edit in the shape `Changes` compares, so a conflict can show the edit against the newer version. */
function contentOf(input: ContentInput): Content {
  return {
    learnings: input.learnings.map((l, i) => ({
      id: l.id ?? `new ${i + 1}`,
      kind: l.kind,
      text: l.text,
      hits: 0,
      status: l.status,
      sources: l.sources ?? null,
    })),
    toolkit: input.toolkit.map((s) => ({
      name: s.name,
      content: s.content,
      description: '',
      language: '',
      args: {},
      sideEffects: 'none' as const,
      sources: s.sources ?? null,
      calls: 0,
      failures: 0,
    })),
    setup: input.setup,
    main: input.main,
    dockerfile: input.dockerfile,
    verify: input.verify,
  };
}

function PlaybookEditor({
  jobId,
  start,
  mode,
  onMode,
  onClose,
}: {
  jobId: string;
  start: PlaybookDto;
  mode: 'form' | 'json';
  onMode: (m: 'form' | 'json') => void;
  onClose: (savedVersion: number | null) => void;
}) {
  const [draft, setDraft] = useState<Draft>(() => draftOf(start.content));
  const [json, setJson] = useState(() => JSON.stringify(inputOf(draftOf(start.content)), null, 2));
  const [summary, setSummary] = useState('');
  // The version this edit started from; after a conflict, the newer one it is to be saved on top of.
  const [base, setBase] = useState(start.version);
  const [conflict, setConflict] = useState<{ latest: PlaybookDto; mine: ContentInput } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);

  const field = (name: string) => error?.field(`content.${name}`);

  /** The content to send, or null after showing why the JSON cannot be sent (nothing goes to the server then). */
  const content = (): ContentInput | null => {
    if (mode === 'form') return inputOf(draft);
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch (err) {
      setError(
        new ApiError(0, 'invalid_json', 'The JSON is not valid, so nothing was sent', [
          { field: 'json', code: 'invalid', message: errorMessage(err) },
        ]),
      );
      return null;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      setError(
        new ApiError(0, 'invalid_json', 'The content must be a JSON object, so nothing was sent', [
          { field: 'json', code: 'invalid', message: 'expected an object such as {"learnings": [], "main": null}' },
        ]),
      );
      return null;
    }
    return parsed as ContentInput;
  };

  const switchMode = (next: 'form' | 'json') => {
    if (next === mode) return;
    setError(null);
    if (next === 'json') {
      setJson(JSON.stringify(inputOf(draft), null, 2));
      onMode(next);
      return;
    }
    const c = content();
    if (!c) return;
    try {
      setDraft(draftOfJson(c));
      onMode(next);
    } catch (err) {
      setError(new ApiError(0, 'invalid_json', errorMessage(err)));
    }
  };

  const save = async (baseVersion: number) => {
    setError(null);
    const c = content();
    if (!c) return;
    setBusy(true);
    try {
      const saved = await call(
        client.PUT('/api/jobs/{id}/playbook', {
          params: { path: { id: jobId } },
          body: { content: c, baseVersion, ...(summary.trim() ? { summary: summary.trim() } : {}) },
        }),
      );
      onClose(saved.version);
    } catch (err) {
      const e = asApiError(err);
      if (e.status === 409) {
        // Nothing of the edit is dropped: it stays in the editor, and the newer version is fetched to compare.
        try {
          const latest = await call(client.GET('/api/jobs/{id}/playbook', { params: { path: { id: jobId } } }));
          setConflict({ latest, mine: c });
        } catch (loadErr) {
          setError(asApiError(loadErr));
        }
      } else setError(e);
    } finally {
      setBusy(false);
    }
  };

  const takeTheirs = () => {
    if (!conflict) return;
    if (!window.confirm(`Drop your edit and load version ${conflict.latest.version}?`)) return;
    setDraft(draftOf(conflict.latest.content));
    setJson(JSON.stringify(inputOf(draftOf(conflict.latest.content)), null, 2));
    setBase(conflict.latest.version);
    setConflict(null);
    setError(null);
  };

  const setLearning = (i: number, change: Partial<LearningDraft>) =>
    setDraft((d) => ({ ...d, learnings: d.learnings.map((l, j) => (j === i ? { ...l, ...change } : l)) }));
  const setScript = (i: number, change: Partial<ScriptDraft>) =>
    setDraft((d) => ({ ...d, toolkit: d.toolkit.map((s, j) => (j === i ? { ...s, ...change } : s)) }));

  return (
    <form
      className="editor-form"
      aria-label="Edit the playbook"
      onSubmit={(e) => {
        e.preventDefault();
        void save(base);
      }}
    >
      <div className="playbook-head">
        <h2>
          Editing version {start.version}
          {base !== start.version && <span className="muted small"> (to be saved on top of version {base})</span>}
        </h2>
        <div className="button-group" role="group" aria-label="Editor">
          <button type="button" aria-pressed={mode === 'form'} onClick={() => switchMode('form')}>
            Form
          </button>
          <button type="button" aria-pressed={mode === 'json'} onClick={() => switchMode('json')}>
            JSON
          </button>
        </div>
      </div>

      {conflict && (
        <div className="card conflict" role="alert">
          <h3>Someone saved the playbook while you were editing</h3>
          <p>
            Version {conflict.latest.version} is now the latest
            {conflict.latest.author ? ` (by ${conflict.latest.author}` : ' ('}
            {conflict.latest.summary ? `: “${conflict.latest.summary}”` : ''}), and your edit started from version{' '}
            {base}. Your edit is kept below; nothing was saved.
          </p>
          <Changes
            before={conflict.latest.content}
            after={contentOf(conflict.mine)}
            title={`Your edit against version ${conflict.latest.version}`}
          />
          <div className="form-actions">
            <button
              type="button"
              className="primary"
              disabled={busy}
              onClick={() => {
                setBase(conflict.latest.version);
                setConflict(null);
                void save(conflict.latest.version);
              }}
            >
              Save mine as the next version
            </button>
            <button type="button" onClick={takeTheirs}>
              Reload version {conflict.latest.version} (drops your edit)
            </button>
          </div>
        </div>
      )}

      {mode === 'json' ? (
        <div className="field">
          <span className="hint">
            The content as the API takes it: learnings, toolkit, setup, main, dockerfile and verify.
          </span>
          <CodeEditor value={json} onChange={setJson} language="json" label="Playbook JSON" minLines={16} />
        </div>
      ) : (
        <>
          <fieldset>
            <legend>Learnings</legend>
            {draft.learnings.length === 0 && <p className="muted">No learnings.</p>}
            {draft.learnings.map((l, i) => {
              const n = i + 1;
              return (
                <div key={l.key} className="item-row">
                  <input
                    aria-label={`Kind of learning ${n}`}
                    value={l.kind}
                    onChange={(e) => setLearning(i, { kind: e.target.value })}
                  />
                  <textarea
                    aria-label={`Learning ${n}`}
                    rows={2}
                    value={l.text}
                    aria-invalid={field(`learnings[${i}].text`) !== undefined}
                    onChange={(e) => setLearning(i, { text: e.target.value })}
                  />
                  <button
                    type="button"
                    className="ghost"
                    onClick={() => setDraft((d) => ({ ...d, learnings: d.learnings.filter((_, j) => j !== i) }))}
                  >
                    Remove learning {n}
                  </button>
                  <input
                    className="wide"
                    aria-label={`When learning ${n} applies`}
                    placeholder="When it applies (optional)"
                    value={l.when}
                    onChange={(e) => setLearning(i, { when: e.target.value })}
                  />
                  <label className="wide small">
                    <input
                      type="checkbox"
                      checked={l.status === 'retired'}
                      onChange={(e) => setLearning(i, { status: e.target.checked ? 'retired' : 'active' })}
                    />{' '}
                    Retired {l.id ? <span className="muted">({l.id})</span> : null}
                  </label>
                  <FieldErrors error={error} prefix={`content.learnings[${i}].`} />
                </div>
              );
            })}
            <button
              type="button"
              onClick={() =>
                setDraft((d) => ({
                  ...d,
                  learnings: [
                    ...d.learnings,
                    { key: newKey(), id: null, kind: 'fact', text: '', when: '', status: 'active', sources: null },
                  ],
                }))
              }
            >
              Add learning
            </button>
          </fieldset>

          <fieldset>
            <legend>Toolkit scripts</legend>
            {draft.toolkit.length === 0 && (
              <p className="muted">
                No scripts. A script starts with a shebang and a <code># svc:description …</code> line.
              </p>
            )}
            {draft.toolkit.map((s, i) => {
              const n = i + 1;
              return (
                <div key={s.key} className="item-row">
                  <input
                    aria-label={`Name of script ${n}`}
                    value={s.name}
                    placeholder="fetch_page.py"
                    aria-invalid={field(`toolkit[${i}].name`) !== undefined}
                    onChange={(e) => setScript(i, { name: e.target.value })}
                  />
                  <span />
                  <button
                    type="button"
                    className="ghost"
                    onClick={() => setDraft((d) => ({ ...d, toolkit: d.toolkit.filter((_, j) => j !== i) }))}
                  >
                    Remove script {n}
                  </button>
                  <div className="wide">
                    <CodeEditor
                      value={s.content}
                      onChange={(content) => setScript(i, { content })}
                      language={scriptLanguage(s.name, s.content)}
                      label={`Script ${n}`}
                    />
                  </div>
                  <FieldErrors error={error} prefix={`content.toolkit[${i}].`} />
                </div>
              );
            })}
            <button
              type="button"
              onClick={() =>
                setDraft((d) => ({
                  ...d,
                  toolkit: [
                    ...d.toolkit,
                    {
                      key: newKey(),
                      name: '',
                      content: '#!/bin/sh\n# svc:description What the script does\n',
                      sources: null,
                    },
                  ],
                }))
              }
            >
              Add script
            </button>
          </fieldset>

          <CodeField
            legend="Setup"
            hint="Runs once before each run, as root, to install what the scripts need."
            value={draft.setup}
            onChange={(setup) => setDraft((d) => ({ ...d, setup }))}
            language="shell"
            error={field('setup')}
          />
          <CodeField
            legend="Main script"
            hint="When set, runs are scripted: this script does the job without the model."
            value={draft.main}
            onChange={(main) => setDraft((d) => ({ ...d, main }))}
            language={scriptLanguage('main', draft.main)}
            error={field('main')}
          />
          <fieldset>
            <legend>Checks</legend>
            <label htmlFor="pb-checks">
              Checks a scripted run must pass, one per line (<code>exit_code == 0</code>,{' '}
              <code>output.count &gt; 0</code>, <code>stdout contains "done"</code>)
            </label>
            <textarea
              id="pb-checks"
              rows={4}
              value={draft.checks}
              spellCheck={false}
              onChange={(e) => setDraft((d) => ({ ...d, checks: e.target.value }))}
            />
            <div>
              <label className="small">
                <input
                  type="checkbox"
                  checked={draft.llm}
                  onChange={(e) => setDraft((d) => ({ ...d, llm: e.target.checked }))}
                />{' '}
                Also ask the model whether the result is right
              </label>
            </div>
            <label htmlFor="pb-varies">Outputs that may differ between runs, one per line</label>
            <textarea
              id="pb-varies"
              rows={2}
              value={draft.varies}
              spellCheck={false}
              onChange={(e) => setDraft((d) => ({ ...d, varies: e.target.value }))}
            />
            <FieldErrors error={error} prefix="content.verify" />
          </fieldset>
          <CodeField
            legend="Dockerfile"
            hint="The job's image: runs use it once built (see the Environment tab)."
            value={draft.dockerfile}
            onChange={(dockerfile) => setDraft((d) => ({ ...d, dockerfile }))}
            language="dockerfile"
            error={field('dockerfile')}
          />
        </>
      )}

      <div className="field">
        <label htmlFor="pb-summary">What changed (optional)</label>
        <input
          id="pb-summary"
          value={summary}
          maxLength={500}
          placeholder="Edited by hand"
          onChange={(e) => setSummary(e.target.value)}
        />
      </div>
      <ErrorBox error={error} />
      <div className="form-actions">
        <button type="submit" className="primary" disabled={busy || conflict !== null}>
          Save as a new version
        </button>
        <button
          type="button"
          className="ghost"
          onClick={() => {
            if (window.confirm('Leave the editor? Your changes are not saved.')) onClose(null);
          }}
        >
          Cancel
        </button>
      </div>
    </form>
  );
}

function CodeField({
  legend,
  hint,
  value,
  onChange,
  language,
  error,
}: {
  legend: string;
  hint: string;
  value: string;
  onChange: (v: string) => void;
  language: Parameters<typeof CodeEditor>[0]['language'];
  error: string | undefined;
}) {
  return (
    <fieldset className={error ? 'field has-error' : undefined}>
      <legend>{legend}</legend>
      <div className="hint">{hint}</div>
      <CodeEditor value={value} onChange={onChange} language={language} label={legend} />
      {error && (
        <div className="field-error" role="alert">
          {error}
        </div>
      )}
    </fieldset>
  );
}

/** The API's field errors under one part of the content, next to that part. */
function FieldErrors({ error, prefix }: { error: ApiError | null; prefix: string }) {
  const mine = error?.fields.filter((f) => f.field.startsWith(prefix)) ?? [];
  if (mine.length === 0) return null;
  return (
    <div className="wide field-error" role="alert">
      {mine.map((f) => (
        <div key={f.field}>
          {f.field.slice(prefix.length).replace(/^\./, '') || 'this'}: {f.message}
        </div>
      ))}
    </div>
  );
}

// ---- Read-only views ----

function ContentView({ content }: { content: Content }) {
  const learnings = content.learnings ?? [];
  const toolkit = content.toolkit ?? [];
  const empty =
    learnings.length === 0 && toolkit.length === 0 && !content.main && !content.setup && !content.dockerfile;
  if (empty)
    return <Empty title="The playbook is empty">The job explores with the agent; what it learns shows up here.</Empty>;
  return (
    <>
      {learnings.length > 0 && (
        <section>
          <h3>Learnings</h3>
          <ul className="learnings">
            {learnings.map((l) => (
              <li key={l.id} className={l.status === 'retired' ? 'retired' : ''}>
                <span className="badge">{l.kind}</span> {l.text}{' '}
                <span className="muted small">
                  {l.id} · used {l.hits}×{l.status === 'retired' ? ' · retired' : ''}
                </span>
                {l.when && <div className="muted small">When: {l.when}</div>}
              </li>
            ))}
          </ul>
        </section>
      )}
      {toolkit.map((s) => (
        <section key={s.name}>
          <h3>
            Toolkit: <code>{s.name}</code>{' '}
            <span className="muted small">
              {s.language} · {s.calls} calls, {s.failures} failed
            </span>
          </h3>
          {s.description && <p>{s.description}</p>}
          <pre className="code">
            <code>{s.content}</code>
          </pre>
        </section>
      ))}
      {content.setup && <CodeSection title="Setup" text={content.setup} />}
      {content.main && <CodeSection title="Main script" text={content.main} />}
      {content.verify && (
        <section>
          <h3>Checks</h3>
          <ul>
            {content.verify.checks.map((c) => (
              <li key={c}>
                <code>{c}</code>
              </li>
            ))}
          </ul>
        </section>
      )}
      {content.dockerfile && <CodeSection title="Dockerfile" text={content.dockerfile} />}
    </>
  );
}

function CodeSection({ title, text }: { title: string; text: string }) {
  return (
    <section>
      <h3>{title}</h3>
      <pre className="code">
        <code>{text}</code>
      </pre>
    </section>
  );
}

const defaultChangesTitle = 'Changes against the version before';

/** What a version changed against another: learnings and scripts by name, texts line by line. */
function Changes({ before, after, title = defaultChangesTitle }: { before: Content; after: Content; title?: string }) {
  const learningsBefore = new Map((before.learnings ?? []).map((l) => [l.id, l.text]));
  const learningsAfter = new Map((after.learnings ?? []).map((l) => [l.id, l.text]));
  const learningChanges = [
    ...[...learningsAfter]
      .filter(([id, text]) => learningsBefore.get(id) !== text)
      .map(([id, text]) => ({ kind: learningsBefore.has(id) ? 'changed' : 'added', id, text })),
    ...[...learningsBefore]
      .filter(([id]) => !learningsAfter.has(id))
      .map(([id, text]) => ({ kind: 'removed', id, text })),
  ];
  const texts: Array<[string, string, string]> = [];
  const scriptsBefore = new Map((before.toolkit ?? []).map((t) => [t.name, t.content]));
  for (const t of after.toolkit ?? [])
    if (scriptsBefore.get(t.name) !== t.content)
      texts.push([`toolkit/${t.name}`, scriptsBefore.get(t.name) ?? '', t.content]);
  for (const [name, content] of scriptsBefore)
    if (!(after.toolkit ?? []).some((t) => t.name === name)) texts.push([`toolkit/${name}`, content, '']);
  for (const key of ['setup', 'main', 'dockerfile'] as const)
    if ((before[key] ?? '') !== (after[key] ?? '')) texts.push([key, before[key] ?? '', after[key] ?? '']);
  const checksBefore = (before.verify?.checks ?? []).join('\n');
  const checksAfter = (after.verify?.checks ?? []).join('\n');
  if (checksBefore !== checksAfter) texts.push(['checks', checksBefore, checksAfter]);
  if (learningChanges.length === 0 && texts.length === 0)
    return (
      <p className="muted">
        {title === defaultChangesTitle ? 'No change against the version before.' : 'No difference.'}
      </p>
    );
  return (
    <section className="changes" aria-label={title}>
      <h3>{title}</h3>
      {learningChanges.length > 0 && (
        <ul className="learnings">
          {learningChanges.map((c) => (
            <li key={`${c.kind}${c.id}`} className={`diff-${c.kind}`}>
              <span className="badge">{c.kind}</span> {c.id}: {c.text}
            </li>
          ))}
        </ul>
      )}
      {texts.map(([name, a, b]) => {
        const diff = lineDiff(a, b);
        return (
          <div key={name}>
            <h4>
              <code>{name}</code>
            </h4>
            {diff === null ? (
              <p className="muted">Too large to compare here.</p>
            ) : (
              <pre className="code diff">
                {diff.map((l, i) => (
                  <span key={i} className={`diff-${l.kind}`}>
                    {l.kind === 'add' ? '+ ' : l.kind === 'del' ? '- ' : '  '}
                    {l.text}
                  </span>
                ))}
              </pre>
            )}
          </div>
        );
      })}
    </section>
  );
}
