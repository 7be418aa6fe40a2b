// MCP benchmarks (issue: tools for jobs): `svc mcp call` round trip from inside a sandbox to a local HTTP MCP server
// (through svc, the broker and the host's MCP client), and listing 200 tools through the test route.
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../app/config.js';
import { createLogger, startServer } from '../server/start.js';
import { startHttpMcpServer } from '../tests/mcp/servers/http-server.js';
import { signIn, useFakeModel } from '../demo/session.js';
import { summarize } from './stats.js';

export async function mcpBenchmarks(root: string, quick: boolean) {
  // The MCP server listens on loopback, which the address guard allows only with the operator's switch.
  process.env.SVC_ALLOW_PRIVATE_NETWORK_TARGETS = 'true';
  const mcp = await startHttpMcpServer({ extraTools: 193 });
  const server = await startServer(
    loadConfig({ port: 0, dataDir: join(root, 'mcp') }, { NODE_ENV: 'test' }),
    createLogger('silent'),
    () => {},
  );
  try {
    const { call } = await signIn(server, 'bench@example.com');
    await useFakeModel(call);
    const registered = await call('POST', '/api/mcp-servers', { name: 'bench', transport: 'http', url: mcp.url });

    const listing: number[] = [];
    let tools = 0;
    for (let i = 0; i < (quick ? 3 : 10); i++) {
      const t0 = performance.now();
      const tested = await call('POST', `/api/mcp-servers/${registered.id}/test`);
      listing.push(performance.now() - t0);
      tools = tested.tools.length;
    }

    const calls = quick ? 30 : 200;
    const loop = `s=$(date +%s%N); for i in $(seq ${calls}); do svc mcp call bench lookup '{"word":"x"}' > /dev/null || exit 1; done; e=$(date +%s%N); svc output set perCallNs $(( (e - s) / ${calls} ))`;
    const job = await call('POST', '/api/jobs', {
      name: 'MCP bench',
      selfImprove: false,
      instruction: `Call the tool with \`${loop}\`.`,
    });
    await call('PUT', `/api/jobs/${job.id}/mcp-servers`, [{ serverId: registered.id, allowedTools: null }]);
    const { runId } = await call('POST', `/api/jobs/${job.id}/runs`, {});
    let run: Record<string, any> = {};
    for (let i = 0; i < 2400; i++) {
      run = await call('GET', `/api/runs/${runId}`);
      if (!['queued', 'provisioning', 'running', 'verifying'].includes(run.status)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    if (run.status !== 'succeeded') throw new Error(`the MCP bench run ended ${run.status}: ${run.error}`);
    return {
      toolListing: { tools, testRouteMs: summarize(listing) },
      svcMcpCall: { calls, perCallMs: Number(run.outputs.perCallNs) / 1e6 },
    };
  } finally {
    await server.close();
    await mcp.close();
  }
}
