import { mcpServersCollection, type McpServerDoc } from '../../projections/mcp-servers.js';
import type { DocumentStore } from '../../store/document-store.js';
import type { Page, PageRequest } from './list.js';

/** The MCP servers registered in one workspace. */
export class McpServerQueries {
  constructor(
    private readonly docs: DocumentStore,
    private readonly workspaceId: string,
  ) {}

  async list(page: PageRequest): Promise<Page<McpServerDoc>> {
    const servers = this.docs.collection<McpServerDoc>(mcpServersCollection);
    const filter = { workspaceId: this.workspaceId };
    const [items, total] = await Promise.all([
      servers.find(filter, page.find),
      servers.count(filter, { search: page.search }),
    ]);
    return { items, total };
  }
}
