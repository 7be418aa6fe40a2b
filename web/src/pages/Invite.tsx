import { useEffect, useState } from 'react';
import { Link, useParams } from 'react-router-dom';
import { asApiError, call, client, type ApiError } from '../api.js';
import { ErrorBox, Spinner } from '../components/ui.js';
import { dateTime } from '../format.js';
import { useApi } from '../hooks.js';
import { reloadInto } from '../workspace-switch.js';

/**
 * Where an invite link (`/invite/<token>`) lands: what the invite is for, and Accept, which joins the workspace and
 * switches the session to it. A person not signed in is sent to sign in and comes back here (the session does that
 * for every page). A token the server does not know (mistyped, used, revoked) answers 404 and the page says so.
 */
export function InvitePage() {
  const { token = '' } = useParams();
  const invite = useApi(`invite ${token}`, (signal) =>
    call(client.POST('/api/invites/lookup', { body: { token }, signal })),
  );
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    document.title = 'Invitation · svc';
  }, []);

  const accept = async () => {
    setBusy(true);
    setError(null);
    try {
      await call(client.POST('/api/invites/accept', { body: { token } }));
      reloadInto('/');
    } catch (err) {
      setError(asApiError(err));
      setBusy(false);
    }
  };

  // A token the server cannot be asked about (too long) is as unknown as one it does not hold.
  const unknown = invite.error && (invite.error.status === 404 || invite.error.code === 'validation_failed');
  const d = invite.data;
  return (
    <section className="narrow invite">
      <h1>Invitation</h1>
      {!d && !invite.error && <Spinner label="Looking the invite up…" />}
      {unknown && (
        <div className="card" role="alert">
          <h2>This invite link is not valid</h2>
          <p>
            It may have been used already, revoked, or copied incompletely. Ask the person who invited you for a new
            link.
          </p>
          <Link to="/jobs">Go to your jobs</Link>
        </div>
      )}
      {invite.error && !unknown && <ErrorBox error={invite.error} onRetry={invite.reload} />}
      {d && (
        <div className="card">
          <h2>Join {d.workspaceName}</h2>
          <p>
            {d.invitedBy ? <strong>{d.invitedBy}</strong> : 'Someone'} invited you to the workspace{' '}
            <strong>{d.workspaceName}</strong> as {d.role === 'admin' ? 'an admin' : 'a member'}.
          </p>
          {d.expired ? (
            <div className="error-box" role="alert">
              This invite expired on {dateTime(d.expiresAt)}. Ask for a new one.
            </div>
          ) : d.alreadyMember ? (
            <div className="notice" role="status">
              You are already a member of {d.workspaceName}: switch to it from the workspace menu. The invite stays
              unused for the person it was meant for.
            </div>
          ) : (
            <p className="muted small">The invite is valid until {dateTime(d.expiresAt)}.</p>
          )}
          <ErrorBox error={error} />
          <div className="form-actions">
            {/* A member (its creator, checking the link) has nothing to join; the server leaves the link unused. */}
            {!d.expired && !d.alreadyMember && (
              <button type="button" className="primary" disabled={busy} onClick={() => void accept()}>
                Accept and join {d.workspaceName}
              </button>
            )}
            <Link className="button" to="/jobs">
              {d.expired || d.alreadyMember ? 'Go to your jobs' : 'Not now'}
            </Link>
          </div>
        </div>
      )}
    </section>
  );
}
