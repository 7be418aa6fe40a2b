import { appendFileSync } from 'node:fs';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { buildTestServer, type ServerLog } from './tools.js';

/**
 * The stdio test server: the same tools over stdin/stdout. It is bundled into one file (tests/mcp/stdio-bundle.ts)
 * so it runs inside a sandbox, where only the host's /usr is visible. Notes are also appended to /tmp/notes, the
 * server's own /tmp, to show side effects happen inside the sandbox.
 */
const log: ServerLog = {
  notes: new Proxy([] as string[], {
    get(target, prop, receiver) {
      if (prop === 'push')
        return (...items: string[]) => {
          for (const i of items) appendFileSync('/tmp/notes', `${i}\n`);
          return target.push(...items);
        };
      return Reflect.get(target, prop, receiver) as unknown;
    },
  }),
};
process.stderr.write('stdio test server starting\n');
await buildTestServer('stdio', log).connect(new StdioServerTransport());
