import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

/** A 1×1 transparent PNG: the image a tool answers (68 bytes). */
export const pixelPng = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

export interface ServerLog {
  /** Notes the side-effect tool recorded, in order. */
  notes: string[];
}

/**
 * The tools every test MCP server offers, built with the official SDK: a read-only tool, a tool with side effects,
 * a tool answering an image, a tool that fails, a structured-only tool, a slow tool, and one that reports what the
 * server process sees (user id, working directory, one variable) for the sandbox checks.
 */
export function buildTestServer(label: string, log: ServerLog, options: { extraTools?: number } = {}): McpServer {
  const server = new McpServer({ name: `test-${label}`, version: '1.0.0' });
  server.registerTool(
    'lookup',
    { description: 'Look a word up', inputSchema: { word: z.string() }, annotations: { readOnlyHint: true } },
    async ({ word }) => ({
      content: [{ type: 'text', text: `${word}: found by ${label}` }],
    }),
  );
  server.registerTool(
    'record',
    {
      description: 'Record a note (a side effect)',
      inputSchema: { note: z.string() },
      annotations: { readOnlyHint: false, destructiveHint: false },
    },
    async ({ note }) => {
      log.notes.push(note);
      return { content: [{ type: 'text', text: `recorded ${log.notes.length}` }] };
    },
  );
  server.registerTool(
    'picture',
    { description: 'Answer a picture', annotations: { readOnlyHint: true } },
    async () => ({
      content: [
        { type: 'text', text: 'here it is' },
        { type: 'image', data: pixelPng, mimeType: 'image/png' },
      ],
    }),
  );
  server.registerTool('broken', { description: 'Always fails' }, async () => {
    throw new Error('the broken tool broke');
  });
  server.registerTool(
    'stats',
    {
      description: 'Structured only',
      outputSchema: { count: z.number(), label: z.string() },
      annotations: { readOnlyHint: true },
    },
    async () => ({
      content: [],
      structuredContent: { count: 3, label },
    }),
  );
  server.registerTool(
    'slow',
    { description: 'Waits', inputSchema: { ms: z.number() }, annotations: { readOnlyHint: true } },
    async ({ ms }) => {
      await new Promise((r) => setTimeout(r, ms));
      return { content: [{ type: 'text', text: `waited ${ms}` }] };
    },
  );
  server.registerTool(
    'whoami',
    { description: 'What the server process sees', annotations: { readOnlyHint: true } },
    async () => ({
      content: [
        {
          type: 'text',
          text: JSON.stringify({
            uid: process.getuid?.() ?? null,
            cwd: process.cwd(),
            token: process.env.TEST_TOKEN ?? null,
          }),
        },
      ],
    }),
  );
  for (let i = 0; i < (options.extraTools ?? 0); i++) {
    server.registerTool(
      `extra_${String(i).padStart(3, '0')}`,
      { description: `Extra tool ${i}`, annotations: { readOnlyHint: true } },
      async () => ({ content: [{ type: 'text', text: `extra ${i}` }] }),
    );
  }
  return server;
}
