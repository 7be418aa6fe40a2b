import { useSearchParams } from 'react-router-dom';
import { ErrorBox, Empty, Spinner } from '../components/ui.js';
import { lineDiff } from '../diff.js';
import { dateTime } from '../format.js';
import { useApi } from '../hooks.js';
import type { Content, PlaybookDto, PlaybookVersionDetailDto, PlaybookVersionEnvelope } from '../types.js';

/** The playbook, read-only: the latest version, or `?version=N` from the list of versions. */
export function PlaybookTab({ jobId }: { jobId: string }) {
  const [params, setParams] = useSearchParams();
  const version = params.get('version');
  const current = useApi<PlaybookDto>(version === null ? `/api/jobs/${jobId}/playbook` : null);
  const chosen = useApi<PlaybookVersionDetailDto>(
    version !== null ? `/api/jobs/${jobId}/playbook/versions/${encodeURIComponent(version)}` : null,
  );
  const versions = useApi<PlaybookVersionEnvelope>(`/api/jobs/${jobId}/playbook/versions?pageSize=100`);
  const shown = version === null ? current : chosen;
  const data = shown.data;
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
        <ErrorBox error={shown.error} onRetry={shown.reload} />
        {!data && !shown.error && <Spinner />}
        {data && (
          <>
            <h2>
              Version {data.version} {data.summary && <span className="muted small">— {data.summary}</span>}
            </h2>
            {'previous' in data && data.previous && <Changes before={data.previous} after={data.content} />}
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

/** What this version changed against the one before: learnings and scripts by name, texts line by line. */
function Changes({ before, after }: { before: Content; after: Content }) {
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
    return <p className="muted">No change against the version before.</p>;
  return (
    <section className="changes" aria-label="Changes against the version before">
      <h3>Changes against the version before</h3>
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
        const lines = lineDiff(a, b);
        return (
          <div key={name}>
            <h4>
              <code>{name}</code>
            </h4>
            {lines === null ? (
              <p className="muted">Too large to compare here.</p>
            ) : (
              <pre className="code diff">
                {lines.map((l, i) => (
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
