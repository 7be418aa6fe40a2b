/** What one run may do through the broker (docs/sandbox.md). */
export const brokerLimits = {
  /** Requests of one run handled at once; the rest wait in order. */
  inFlight: 8,
  bodyBytes: 8 * 1024 * 1024,
  outputs: 100,
  outputBytes: 1024 * 1024,
  steps: 1000,
  stepBytes: 200,
  summaryBytes: 16 * 1024,
  failChars: 2000,
  /** Broker calls recorded on the timeline; later ones only when they are of a kept kind. */
  recordedCalls: 1000,
  /** Non-read-only MCP calls still recorded once `recordedCalls` is reached. */
  actionCalls: 200,
  /** The `result` of an MCP call on the timeline. */
  mcpResultChars: 4000,
  llmTimeoutMs: 5 * 60_000,
  llmMaxTokens: 16_000,
  llmDefaultMaxTokens: 4096,
} as const;

export const costLimitMessage = 'the run reached its cost limit, so svc llm is no longer available';
export const defaultFailReason = 'the script reported a failure';
