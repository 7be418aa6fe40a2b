import type { SignInProviderConfig } from '../../domain/sign-in.js';
import { GithubSignIn } from './github.js';
import { OidcSignIn } from './oidc.js';
import type { SignInProtocol } from './protocol.js';

export type { LoginChecks, ProviderAccount, SignInProtocol } from './protocol.js';
export { ProviderFailure } from './protocol.js';

export function protocolFor(cfg: SignInProviderConfig): SignInProtocol {
  return cfg.type === 'oidc' ? new OidcSignIn(cfg) : new GithubSignIn(cfg);
}
