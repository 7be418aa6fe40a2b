import { NavLink } from 'react-router-dom';

export function SettingsNav() {
  return (
    <nav className="tabs" aria-label="Settings sections">
      <NavLink to="/settings/workspace">Workspace</NavLink>
      <NavLink to="/settings/members">Members and invites</NavLink>
      <NavLink to="/settings/secrets">Secrets</NavLink>
      <NavLink to="/settings/providers">Providers and models</NavLink>
      <NavLink to="/settings/mcp">MCP servers</NavLink>
      <NavLink to="/settings/tokens">API tokens</NavLink>
    </nav>
  );
}
