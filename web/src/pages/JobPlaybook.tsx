import { useSearchParams } from 'react-router-dom';
import { ErrorBox, Empty, Spinner } from '../components/ui.js';
import { dateTime } from '../format.js';
import { useApi } from '../hooks.js';
import type { Content, PlaybookDto, PlaybookVersionDetailDto, PlaybookVersionEnvelope } from '../types.js';

/** The playbook, read-only: the latest version, or `?version=N` from the list of versions. */
export function PlaybookTab({ jobId }: { jobId: string }) {
  const [params, setParams] = useSearchParams();
  const version = params.get('version');
  const current = useApi<PlaybookDto>(version === null ? `/api/jobs/${jobId}/playbook` : null);
  const chosen = useApi<PlaybookVersionDetailDto>(version !== null ? `/api/jobs/${jobId}/playbook/versions/${encodeURIComponent(version)}` : null);
  const versions = useApi<PlaybookVersionEnvelope>(`/api/jobs/${jobId}/playbook/versions?pageSize=100`);
  const shown = version === null ? current : chosen;
  const data = shown.data;
  return (
    <div className="playbook">
      <aside className="versions card" aria-label="Versions">
        <h2>Versions</h2>
        <ErrorBox error={versions.error} />
        {versions.data && versions.data.items.length === 0 && <p className="muted">No versions yet: the job learns from its runs.</p>}
        <ul>
          {versions.data?.items.map((v) => (
            <li key={v.version}>
              <button type="button" className={`link${String(v.version) === version || (version === null && data?.version === v.version) ? ' current' : ''}`} onClick={() => setParams({ version: String(v.version) })}>
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
        <ErrorBox error={shown.error} onRetry={shown.reload} />
        {!data && !shown.error && <Spinner />}
        {data && (
          <>
            <h2>
              Version {data.version} {data.summary && <span className="muted small">— {data.summary}</span>}
            </h2>
            <ContentView content={data.content} />
          </>
        )}
      </div>
    </div>
  );
}

function ContentView({ content }: { content: Content }) {
  const learnings = content.learnings ?? [];
  const toolkit = content.toolkit ?? [];
  const empty = learnings.length === 0 && toolkit.length === 0 && !content.main && !content.setup && !content.dockerfile;
  if (empty) return <Empty title="The playbook is empty">The job explores with the agent; what it learns shows up here.</Empty>;
  return (
    <>
      {learnings.length > 0 && (
        <section>
          <h3>Learnings</h3>
          <ul className="learnings">
            {learnings.map((l) => (
              <li key={l.id} className={l.status === 'retired' ? 'retired' : ''}>
                <span className="badge">{l.kind}</span> {l.text} <span className="muted small">{l.id} · used {l.hits}×{l.status === 'retired' ? ' · retired' : ''}</span>
                {l.when && <div className="muted small">When: {l.when}</div>}
              </li>
            ))}
          </ul>
        </section>
      )}
      {toolkit.map((s) => (
        <section key={s.name}>
          <h3>
            Toolkit: <code>{s.name}</code> <span className="muted small">{s.language} · {s.calls} calls, {s.failures} failed</span>
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
