import { Navigate, useLocation } from 'react-router-dom';

/**
 * Where an MCP server's OAuth login comes back to (`/mcp?login=ok` or `?error=...`, the callback's fixed address):
 * the MCP servers page, which shows the outcome.
 */
export function McpLandingPage() {
  const { search } = useLocation();
  return <Navigate to={{ pathname: '/settings/mcp', search }} replace />;
}
