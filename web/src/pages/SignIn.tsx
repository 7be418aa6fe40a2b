import { useEffect } from 'react';
import { useNavigate, useSearchParams } from 'react-router-dom';
import { ErrorBox, Spinner } from '../components/ui.js';
import { safeNext, useSession } from '../session.js';

/**
 * Sign-in and first start. Today the only way in is a single-use link printed on the server; the link's route sets
 * the session cookie and lands on `/`, which the app turns into the jobs page.
 */
export function SignInPage() {
  const { me, checking, error, refresh } = useSession();
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const next = safeNext(params.get('next'));

  useEffect(() => {
    if (me) navigate(next, { replace: true });
  }, [me, next, navigate]);

  useEffect(() => {
    document.title = 'Sign in · svc';
  }, []);

  return (
    <div className="signin">
      <div className="card signin-card">
        <h1>
          <img src="/favicon.svg" alt="" width="28" height="28" /> Sign in to svc
        </h1>
        {checking ? (
          <Spinner label="Checking your session…" />
        ) : (
          <>
            <ErrorBox error={error} onRetry={refresh} />
            <p>This instance signs people in with single-use links. To get one, run this on the server:</p>
            <pre className="command">
              <code>svc admin sign-in-link</code>
            </pre>
            <p>Open the link it prints in this browser. It works once and for a short time; you land on your jobs.</p>
            <h2>First start</h2>
            <ol className="steps">
              <li>
                Start the server with <code>svc serve</code> and open a sign-in link as above.
              </li>
              <li>
                Add a model provider (API: <code>POST /api/providers</code>) and choose the workspace's agent model.
              </li>
              <li>
                Create a job from <strong>Jobs → New job</strong>, then <strong>Run now</strong> and watch its timeline.
              </li>
            </ol>
            <p className="muted">
              Sign-in with an identity provider comes with a later version. Scripts use API tokens; the reference is at{' '}
              <a href="/api/docs">/api/docs</a>.
            </p>
            <button type="button" onClick={refresh}>
              I have opened a link — check again
            </button>
          </>
        )}
      </div>
    </div>
  );
}
