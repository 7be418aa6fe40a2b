import { useEffect, useState } from 'react';
import { Link, useSearchParams } from 'react-router-dom';
import { asApiError, call, client, type ApiError } from '../api.js';
import { byteSize } from '../components/byte-size.js';
import '../components/job-tabs.css';
import { ErrorBox, Empty, Field, Spinner, StatusBadge } from '../components/ui.js';
import { dateTime, duration } from '../format.js';
import { useApi } from '../hooks.js';
import type { JobDto } from '../types.js';

const building = (s: string) => s === 'queued' || s === 'building';

/**
 * Where the job's runs execute: the base image (the job's `image`, else the workspace default) or, when the playbook
 * has a Dockerfile, the image built from it. Lists the builds with their logs (`?image=<id>` opens one), rebuilds,
 * and drops the Dockerfile to go back to the base image (a new playbook version, so it can be rolled back).
 */
export function EnvironmentTab({ job, onJobChange }: { job: JobDto; onJobChange: () => void }) {
  const [params, setParams] = useSearchParams();
  const open = params.get('image');
  const playbook = useApi(`playbook ${job.id}`, (signal) =>
    call(client.GET('/api/jobs/{id}/playbook', { params: { path: { id: job.id } }, signal })),
  );
  const images = useApi(`images ${job.id}`, (signal) =>
    call(client.GET('/api/jobs/{id}/images', { params: { path: { id: job.id }, query: { pageSize: 50 } }, signal })),
  );
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState('');
  const [busy, setBusy] = useState(false);
  const dockerfile = playbook.data?.content.dockerfile ?? null;
  const live = images.data?.items.some((i) => building(i.status)) ?? false;

  // A build in progress is followed every 2 s (the builder saves its log that often) until it ends.
  const reloadImages = images.reload;
  useEffect(() => {
    if (!live) return;
    const t = window.setInterval(reloadImages, 2000);
    return () => window.clearInterval(t);
  }, [live, reloadImages]);

  const rebuild = async () => {
    setError(null);
    setNotice('');
    setBusy(true);
    try {
      const queued = await call(client.POST('/api/jobs/{id}/images/rebuild', { params: { path: { id: job.id } } }));
      setNotice('A new build is queued.');
      setParams({ image: queued.id });
      images.reload();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };

  const switchToBaseImage = async () => {
    const p = playbook.data;
    if (!p) return;
    if (
      !window.confirm(
        'Remove the Dockerfile from the playbook? Runs then use the base image. The removal is a new playbook version, so it can be rolled back.',
      )
    )
      return;
    setError(null);
    setNotice('');
    setBusy(true);
    try {
      const saved = await call(
        client.PUT('/api/jobs/{id}/playbook', {
          params: { path: { id: job.id } },
          body: {
            content: { ...p.content, dockerfile: null },
            baseVersion: p.version,
            summary: 'Dockerfile removed: runs use the base image',
          },
        }),
      );
      setNotice(`Runs now use the base image (playbook version ${saved.version}).`);
      playbook.reload();
      onJobChange();
    } catch (err) {
      setError(asApiError(err));
      playbook.reload();
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="stack">
      {notice && (
        <div className="notice ok" role="status">
          {notice}
        </div>
      )}
      <ErrorBox error={error} />
      <BaseImage job={job} onSaved={onJobChange} active={dockerfile === null} />
      <div className="card">
        <h2>Dockerfile</h2>
        <ErrorBox error={playbook.error} onRetry={playbook.reload} />
        {!playbook.data && !playbook.error && <Spinner />}
        {playbook.data && dockerfile === null && (
          <p className="muted">
            The playbook has no Dockerfile, so runs use the base image.{' '}
            <Link to={`/jobs/${job.id}/playbook?edit=form`}>Add one in the playbook</Link> to build a job image with the
            tools it needs.
          </p>
        )}
        {dockerfile !== null && (
          <>
            <p className="muted small">
              From playbook version {playbook.data?.version}; runs use the image built from it.
            </p>
            <pre className="code" aria-label="Dockerfile">
              <code>{dockerfile}</code>
            </pre>
            <div className="form-actions">
              <button type="button" className="primary" disabled={busy} onClick={() => void rebuild()}>
                Rebuild image
              </button>
              <Link className="button" to={`/jobs/${job.id}/playbook?edit=form`}>
                Edit the Dockerfile
              </Link>
              <button type="button" className="ghost" disabled={busy} onClick={() => void switchToBaseImage()}>
                Use the base image instead
              </button>
            </div>
          </>
        )}
      </div>
      <div className="card">
        <h2>Builds</h2>
        <ErrorBox error={images.error} onRetry={images.reload} />
        {!images.data && !images.error && <Spinner />}
        {images.data && images.data.items.length === 0 && (
          <Empty title="No builds yet">A build starts when the playbook gets a Dockerfile.</Empty>
        )}
        {images.data && images.data.items.length > 0 && (
          <div className="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Build</th>
                  <th scope="col">Status</th>
                  <th scope="col">Took</th>
                  <th scope="col">Size</th>
                  <th scope="col">Image</th>
                </tr>
              </thead>
              <tbody>
                {images.data.items.map((i) => (
                  <tr key={i.id} className={open === i.id ? 'selected' : undefined}>
                    <td>
                      <button
                        type="button"
                        className="link"
                        aria-expanded={open === i.id}
                        onClick={() => setParams(open === i.id ? {} : { image: i.id })}
                      >
                        {dateTime(i.createdAt)}
                      </button>
                    </td>
                    <td>
                      <StatusBadge status={i.status} />
                      {i.error && <div className="small">{i.error}</div>}
                    </td>
                    <td className="small">
                      {i.startedAt && i.finishedAt ? duration(i.finishedAt - i.startedAt) : '—'}
                    </td>
                    <td className="small">{byteSize(i.sizeBytes)}</td>
                    <td className="small">
                      {i.ref ? <code>{i.ref}</code> : <span className="muted">—</span>}
                      {i.baseDigest && <div className="muted">base {i.baseDigest.slice(0, 19)}…</div>}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
      {open && <BuildLog jobId={job.id} imageId={open} />}
    </div>
  );
}

function BaseImage({ job, onSaved, active }: { job: JobDto; onSaved: () => void; active: boolean }) {
  const [image, setImage] = useState(job.image ?? '');
  const [error, setError] = useState<ApiError | null>(null);
  const [saved, setSaved] = useState(false);
  const save = async () => {
    setError(null);
    setSaved(false);
    try {
      // An empty string clears it: the workspace default applies again.
      await call(client.PATCH('/api/jobs/{id}', { params: { path: { id: job.id } }, body: { image: image.trim() } }));
      setSaved(true);
      onSaved();
    } catch (err) {
      setError(asApiError(err));
    }
  };
  return (
    <form
      className="card form"
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <h2>Base image {active && <span className="badge">in use</span>}</h2>
      <Field
        label="Base image"
        htmlFor="base-image"
        error={error?.field('image')}
        hint="The image runs use when the playbook has no Dockerfile; empty means the workspace default."
      >
        <input
          id="base-image"
          value={image}
          maxLength={500}
          placeholder="workspace default"
          onChange={(e) => setImage(e.target.value)}
        />
      </Field>
      {error && !error.field('image') && <ErrorBox error={error} />}
      {saved && (
        <div className="notice ok" role="status">
          Base image saved.
        </div>
      )}
      <div className="form-actions">
        <button type="submit">Save base image</button>
      </div>
    </form>
  );
}

function BuildLog({ jobId, imageId }: { jobId: string; imageId: string }) {
  const detail = useApi(`image ${jobId} ${imageId}`, (signal) =>
    call(client.GET('/api/jobs/{id}/images/{imageId}', { params: { path: { id: jobId, imageId } }, signal })),
  );
  const live = detail.data ? building(detail.data.status) : false;
  const reload = detail.reload;
  useEffect(() => {
    if (!live) return;
    const t = window.setInterval(reload, 2000);
    return () => window.clearInterval(t);
  }, [live, reload]);
  return (
    <div className="card" aria-label="Build log">
      <h2>Build log</h2>
      <ErrorBox error={detail.error} onRetry={detail.reload} />
      {!detail.data && !detail.error && <Spinner />}
      {detail.data && (
        <>
          <p className="small">
            <StatusBadge status={detail.data.status} /> {dateTime(detail.data.createdAt)}
            {detail.data.digest && (
              <>
                {' '}
                · <code>{detail.data.digest.slice(0, 19)}…</code>
              </>
            )}
          </p>
          <pre className="code build-log">
            <code>{detail.data.log || (live ? 'Waiting for the builder…' : 'The build wrote no log.')}</code>
          </pre>
          <details>
            <summary>Dockerfile of this build</summary>
            <pre className="code">
              <code>{detail.data.dockerfile}</code>
            </pre>
          </details>
        </>
      )}
    </div>
  );
}
