import { useEffect, useState } from 'react';
import { useNavigate, useSearchParams } from 'react-router-dom';
import { asApiError, call, client, type ApiError } from '../api.js';
import { ErrorBox, Spinner } from '../components/ui.js';
import { safeNext, useSession } from '../session.js';
import type { SetupOutputBody } from '../types.js';

/** What each `?error=` code the server's sign-in routes redirect with means to the person (docs/design.md, "Sign-in"). */
const errorMessages: Record<string, string> = {
  not_allowed: 'Your account is not allowed to use the service. Ask the operator to add you.',
  deactivated: 'This account has been deactivated. Ask an admin of this instance to reactivate it.',
  invalid_login: 'The sign-in took too long or was interrupted. Please start again.',
  provider_mismatch: 'The sign-in was started with another provider. Please start again.',
  provider_error: 'The identity provider refused the sign-in or could not be reached. Please try again.',
  not_found: 'That sign-in provider is not configured here.',
  rate_limited: 'Too many sign-in attempts from here. Wait a minute and try again.',
  invalid_link: 'This sign-in link is invalid, expired or already used. Ask for a new one.',
};

/** The provider this browser signed in with last, marked on the page; a hint only, kept in this browser. */
const lastProviderKey = 'svc.lastProvider';

function readLastProvider(): string | null {
  try {
    return window.localStorage.getItem(lastProviderKey);
  } catch {
    return null; // storage disabled: no mark
  }
}

function rememberProvider(id: string): void {
  try {
    window.localStorage.setItem(lastProviderKey, id);
  } catch {
    // storage disabled: nothing to remember
  }
}

/**
 * Sign-in and first start: the configured identity providers (primary first), a readable message for a refused
 * sign-in (`/login?error=<code>`), and guidance while nobody has signed in yet.
 */
export function SignInPage() {
  const { me, checking, error, refresh } = useSession();
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const next = safeNext(params.get('next'));
  const code = params.get('error');
  const [setup, setSetup] = useState<SetupOutputBody | null>(null);
  const [setupError, setSetupError] = useState<ApiError | null>(null);
  const [lastUsed] = useState(readLastProvider);

  useEffect(() => {
    if (me) navigate(next, { replace: true });
  }, [me, next, navigate]);

  useEffect(() => {
    document.title = 'Sign in · svc';
    call(client.GET('/api/setup')).then(setSetup, (err: unknown) => setSetupError(asApiError(err)));
  }, []);

  const providers = setup?.providers ?? [];
  const loginHref = (id: string) => `/api/auth/login/${encodeURIComponent(id)}?redirect=${encodeURIComponent(next)}`;

  return (
    <div className="signin">
      <div className="card signin-card">
        <h1>
          <img src="/favicon.svg" alt="" width="28" height="28" /> Sign in to svc
        </h1>
        {code && (
          <div className="error-box" role="alert">
            {errorMessages[code] ?? 'The sign-in did not succeed. Please try again.'}
          </div>
        )}
        {checking || (!setup && !setupError) ? (
          <Spinner label="Checking your session…" />
        ) : (
          <>
            <ErrorBox error={error ?? setupError} onRetry={refresh} />
            {providers.length > 0 && (
              <ul className="signin-providers" aria-label="Sign-in providers">
                {providers.map((p) => (
                  <li key={p.id}>
                    <a
                      className={p.primary ? 'button primary' : 'button'}
                      href={loginHref(p.id)}
                      onClick={() => rememberProvider(p.id)}
                    >
                      {/* The page's policy loads images from this origin only (img-src 'self'). */}
                      {p.icon && p.icon.startsWith('/') && !p.icon.startsWith('//') && (
                        <img src={p.icon} alt="" width="18" height="18" />
                      )}
                      Sign in with {p.name}
                    </a>
                    {lastUsed === p.id && <span className="badge">Last used</span>}
                  </li>
                ))}
              </ul>
            )}
            {setup && !setup.hasUsers && (
              <>
                <h2>First start</h2>
                <ol className="steps">
                  {providers.length > 0 ? (
                    <li>
                      Sign in with a provider above. The first person to sign in owns the Default workspace
                      {setup.workspacesEnabled ? '; everyone else gets a workspace of their own' : ''}.
                    </li>
                  ) : (
                    <li>
                      No identity provider is configured yet: add one under <code>auth.providers</code> in the
                      configuration file (<code>svc serve --config svc.yaml</code>, see the README), or use a sign-in
                      link as below.
                    </li>
                  )}
                  <li>
                    Add a model provider (API: <code>POST /api/providers</code>) and choose the workspace&apos;s agent
                    model.
                  </li>
                  <li>
                    Create a job from <strong>Jobs → New job</strong>, then <strong>Run now</strong> and watch its
                    timeline.
                  </li>
                </ol>
              </>
            )}
            <h2>{providers.length > 0 ? 'Other ways in' : 'Sign-in link'}</h2>
            <p>An operator can print a single-use sign-in link on the server:</p>
            <pre className="command">
              <code>svc admin sign-in-link</code>
            </pre>
            <p>Open the link it prints in this browser. It works once and for a short time; you land on your jobs.</p>
            <p className="muted">
              Scripts use API tokens; the reference is at <a href="/api/docs">/api/docs</a>.
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
