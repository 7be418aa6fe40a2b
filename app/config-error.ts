/** A configuration the service refuses to start with; the message says what to set, and is all an operator sees. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}
