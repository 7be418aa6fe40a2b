import {
  HeaderError,
  parseScriptHeader,
  toolDescription,
  toolkitArgv,
  toolkitTimeoutMs,
  toolName,
  toolSchema,
  type ArgSpec,
} from '../../../domain/playbook-header.js';
import type { Script } from '../../../schemas/playbook.js';
import { clip, type Tool } from './tools.js';

const safeName = (callId: string) => callId.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 100) || 'call';

/**
 * The playbook's toolkit scripts as agent tools `toolkit__<name>` (docs/design.md, "Learning: scripted runs,
 * reflection, shadow runs"): arguments become `--name value` flags in sorted order, output is combined and kept in the
 * call's log, the exit status is the script's. Never read-only: a script may change anything.
 */
export function toolkitTools(
  scripts: readonly Script[],
  onCall: (name: string, failed: boolean) => void = () => undefined,
): Tool[] {
  return scripts.map((script) => {
    // Saved scripts passed the header check; the arguments' types come from it, not from their display form.
    let args: Record<string, ArgSpec> = {};
    try {
      args = parseScriptHeader(script.content).args;
    } catch {
      // a header that no longer parses gives a tool without arguments
    }
    return toolFor(script, args, onCall);
  });
}

function toolFor(script: Script, args: Record<string, ArgSpec>, onCall: (name: string, failed: boolean) => void): Tool {
  return {
    readOnly: false,
    spec: { name: toolName(script.name), description: toolDescription(script), inputSchema: toolSchema(args) },
    async run(values, callId, ctx) {
      let argv: string[];
      try {
        argv = toolkitArgv(args, values);
      } catch (err) {
        if (err instanceof HeaderError) return { content: `${toolName(script.name)}: ${err.message}.`, isError: true };
        throw err;
      }
      if (ctx.signal.aborted)
        return { content: `[the script was not started because ${ctx.stopReason()}]`, isError: true };
      const logPath = `/svc/logs/${safeName(callId)}.txt`;
      const quoted = ['/svc/toolkit/' + script.name, ...argv].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
      const command = `( ${quoted} ) < /dev/null 2>&1 | tee ${logPath}; exit "\${PIPESTATUS[0]}"`;
      const r = await ctx.sandbox.exec({
        cmd: ['bash', '-c', command],
        user: ctx.user,
        cwd: '/workspace',
        env: ctx.env,
        signal: ctx.signal,
        timeoutMs: Math.min(toolkitTimeoutMs, Math.max(1000, ctx.remainingMs())),
        onOutput: (b) => ctx.onOutput(callId, b.toString('utf8')),
      });
      const failed = r.exitCode !== 0 || r.timedOut;
      onCall(script.name, failed);
      const meta = { exitCode: r.exitCode, timedOut: r.timedOut, bytes: r.bytes, logPath, script: script.name };
      const body = clip(r.output, r.bytes, logPath);
      if (r.cancelled || ctx.signal.aborted)
        return { content: `[the script was cut off because ${ctx.stopReason()}]\n${body}`, isError: true, meta };
      return {
        content: `exit code: ${r.exitCode}${r.timedOut ? `\ntimed out after ${toolkitTimeoutMs / 1000}s and was killed` : ''}\n${body}`,
        isError: failed,
        meta,
      };
    },
  };
}
