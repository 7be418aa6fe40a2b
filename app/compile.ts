import type { Static } from 'typebox';
import { DomainError } from '../domain/decider.js';
import {
  compileAnswerSchema,
  compileSchemaName,
  compileSystemPromptFor,
  compileUserMessage,
  finishCompile,
} from '../domain/compile.js';
import { errorMessage } from '../domain/error-message.js';
import type { SandboxInfo } from '../schemas/system.js';
import type { Spec } from '../domain/job-types.js';
import type { McpServers } from './mcp-servers.js';
import type { Models } from './models.js';

const timeoutMs = 5 * 60_000;

/** The model could not be asked, or did not answer JSON: the API answers 502 `provider_error` with this message. */
export class CompileFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CompileFailed';
  }
}

/**
 * A sentence in, a proposed job out, nothing saved: the workspace's utility model (else its agent model) answers with
 * structured output, MCP needs are matched against the workspace's servers, and the proposal is checked against what
 * this instance's sandbox backend can do.
 */
export class JobCompiler {
  constructor(
    private readonly models: Models,
    private readonly mcp: McpServers,
    /** The sandbox backend of this process, or null for a process without the runner role. */
    private readonly sandbox: () => Static<typeof SandboxInfo> | null,
    private readonly clock: () => number = Date.now,
  ) {}

  /** `askQuestions` (default true) lets the model ask clarifying questions along with its proposal. */
  async compile(workspaceId: string, sentence: string, options: { askQuestions?: boolean } = {}) {
    const instruction = sentence.trim();
    if (instruction === '')
      throw DomainError.validation([{ field: 'instruction', code: 'required', message: 'must not be blank' }]);
    const model = await this.models.resolve(workspaceId, 'utility', null);
    if (!model) throw new DomainError('unsupported', 'Set a utility model in Settings to compile jobs');
    const askQuestions = options.askQuestions ?? true;
    const servers = await this.mcp.names(workspaceId);
    let text: string;
    try {
      const answer = await model.client.complete({
        model: model.name,
        system: [compileSystemPromptFor(askQuestions)],
        messages: [
          {
            role: 'user',
            text: compileUserMessage(
              instruction,
              this.clock(),
              servers.map((s) => s.name),
            ),
          },
        ],
        tools: [],
        maxTokens: 4096,
        effort: 'low',
        jsonSchema: { name: compileSchemaName, schema: compileAnswerSchema },
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = answer.text;
    } catch (err) {
      throw new CompileFailed(`The model could not compile the job: ${errorMessage(err)}`);
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text) as unknown;
    } catch {
      throw new CompileFailed('The model could not compile the job: its answer was not JSON');
    }
    const sandbox = this.sandbox();
    return finishCompile(raw, {
      instruction,
      servers,
      networks: sandbox?.capabilities.networks ?? null,
      imageBuilds: sandbox ? sandbox.imageBuilds : null,
      askQuestions,
    });
  }

  /**
   * The spec a changed instruction compiles to, for a job update (docs/jobs.md, "Compile"); null when the workspace
   * has no model to compile with, so the job keeps its spec. A model that fails throws `CompileFailed`.
   */
  async respec(workspaceId: string, instruction: string): Promise<Spec | null> {
    if (!(await this.models.resolve(workspaceId, 'utility', null))) return null;
    return (await this.compile(workspaceId, instruction, { askQuestions: false })).spec;
  }
}
