import { createContext, useCallback, useContext, useEffect, useState, type ReactNode } from 'react';
import { useLocation, useNavigate } from 'react-router-dom';
import { ApiError, call, client, signedOutEvent } from './api.js';
import type { MeOutputBody } from './types.js';

interface Session {
  me: MeOutputBody | null;
  /** True until the first answer of /api/users/me. */
  checking: boolean;
  error: ApiError | null;
  refresh: () => void;
  signOut: () => Promise<void>;
}

const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside SessionProvider');
  return s;
}

/** The sign-in page's paths: `/sign-in`, and `/login` where the server sends refused sign-ins (`?error=`). */
export const isSignInPath = (path: string) => path.startsWith('/sign-in') || path.startsWith('/login');

/** Where to go back to after signing in: only a path of this app, never another origin. */
export function safeNext(raw: string | null): string {
  if (!raw || !raw.startsWith('/') || raw.startsWith('//') || raw.startsWith('/\\') || isSignInPath(raw)) return '/';
  return raw;
}

/**
 * A link may name the workspace it belongs to (`?workspace=<id>`): the session switches there first, and the
 * parameter leaves the address (docs/api.md, "Workspaces and members"). A workspace the person is not in keeps the
 * session where it was; the page then answers as it would without the parameter.
 */
async function workspaceFromLink(): Promise<void> {
  const url = new URL(window.location.href);
  const id = url.searchParams.get('workspace');
  if (!id) return;
  await call(client.POST('/api/workspaces/{id}/switch', { params: { path: { id } } })).catch(() => undefined);
  // Only once the session has switched: until then the address still says where the page is going.
  url.searchParams.delete('workspace');
  window.history.replaceState(window.history.state, '', url.pathname + url.search + url.hash);
}

export function SessionProvider({ children }: { children: ReactNode }) {
  const [me, setMe] = useState<MeOutputBody | null>(null);
  const [checking, setChecking] = useState(true);
  const [error, setError] = useState<ApiError | null>(null);
  const navigate = useNavigate();
  const location = useLocation();

  const refresh = useCallback(() => {
    workspaceFromLink()
      .then(() => call(client.GET('/api/users/me')))
      .then(
        (m) => {
          setMe(m);
          setError(null);
          setChecking(false);
        },
        (err: unknown) => {
          setMe(null);
          setError(err instanceof ApiError && err.status !== 401 ? err : null);
          setChecking(false);
        },
      );
  }, []);

  useEffect(refresh, [refresh]);

  // Any 401 from the API (an expired or cleared session) sends the person to sign in, remembering the page.
  useEffect(() => {
    const onSignedOut = () => {
      setMe(null);
      if (!isSignInPath(window.location.pathname)) {
        navigate(`/sign-in?next=${encodeURIComponent(window.location.pathname + window.location.search)}`, {
          replace: true,
        });
      }
    };
    window.addEventListener(signedOutEvent, onSignedOut);
    return () => window.removeEventListener(signedOutEvent, onSignedOut);
  }, [navigate]);

  useEffect(() => {
    if (!checking && !me && !error && !isSignInPath(location.pathname)) {
      navigate(`/sign-in?next=${encodeURIComponent(location.pathname + location.search)}`, { replace: true });
    }
  }, [checking, me, error, location.pathname, location.search, navigate]);

  const signOut = useCallback(async () => {
    await call(client.POST('/api/auth/logout'));
    setMe(null);
    navigate('/sign-in', { replace: true });
  }, [navigate]);

  return (
    <SessionContext.Provider value={{ me, checking, error, refresh, signOut }}>{children}</SessionContext.Provider>
  );
}
