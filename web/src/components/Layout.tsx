import { NavLink, Outlet } from 'react-router-dom';
import { useSession } from '../session.js';
import { Palette } from './Palette.js';
import { WorkspaceSwitcher } from './WorkspaceSwitcher.js';
import { ErrorBox, Spinner } from './ui.js';

export function Layout() {
  const { me, checking, error, refresh, signOut } = useSession();
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <NavLink to="/" end className="brand" aria-label="svc home">
          <img src="/favicon.svg" alt="" width="22" height="22" /> svc
        </NavLink>
        <WorkspaceSwitcher />
        {me && (
          <nav aria-label="Main">
            <NavLink to="/" end>
              Dashboard
            </NavLink>
            <NavLink to="/jobs">Jobs</NavLink>
            <NavLink to="/runs">Runs</NavLink>
            {me.workspace.role !== 'member' && <NavLink to="/audit">Audit</NavLink>}
            <NavLink to="/settings">Settings</NavLink>
            {me.isAdmin && !me.viaToken && <NavLink to="/admin">Admin</NavLink>}
            <a href="/api/docs">API</a>
          </nav>
        )}
        {me && (
          <div className="who">
            <kbd className="muted kbd-hint" title="Open the command palette">
              Ctrl K
            </kbd>
            <span className="muted" title={me.workspace.name}>
              {me.name ?? me.email ?? 'signed in'}
            </span>
            <button type="button" className="ghost" onClick={() => void signOut()}>
              Sign out
            </button>
          </div>
        )}
      </header>
      {me && <Palette />}
      <main id="main" tabIndex={-1}>
        {/* The page starts loading its data while the session is checked: one round trip less before the first
            rows. A page's own 401 sends the app to sign-in like the check does. */}
        {error ? (
          <ErrorBox error={error} onRetry={refresh} />
        ) : checking || me ? (
          <Outlet />
        ) : (
          <Spinner label="Redirecting to sign-in…" />
        )}
      </main>
    </div>
  );
}
