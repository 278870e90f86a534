// oidc-provider ships no types and @types/oidc-provider is not a dependency; this declares
// the little the test issuer uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void> | void;
  }
}
