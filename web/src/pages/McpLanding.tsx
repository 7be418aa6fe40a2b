import { Link, useSearchParams } from 'react-router-dom';

/** Where an MCP server's OAuth login comes back to (`login=ok`, or `error=...`). */
export function McpLandingPage() {
  const [params] = useSearchParams();
  const error = params.get('error');
  const ok = params.get('login') === 'ok';
  return (
    <section>
      <h1>MCP servers</h1>
      {ok && (
        <div className="notice ok" role="status">
          The MCP server login succeeded; jobs granted this server can use it from their next run.
        </div>
      )}
      {error && (
        <div className="error-box" role="alert">
          <strong>The MCP server login did not complete: {error.replace(/_/g, ' ')}</strong>
        </div>
      )}
      {!ok && !error && (
        <p>
          Servers are managed through the API for now (<code>/api/mcp-servers</code>).
        </p>
      )}
      <p>
        <Link to="/jobs">Back to the jobs</Link>
      </p>
    </section>
  );
}
