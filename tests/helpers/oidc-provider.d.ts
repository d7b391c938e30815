/**
 * The slice of `oidc-provider` (v9, ships no types; @types/oidc-provider is not a dependency) that the e2e
 * harness uses. Kept narrow on purpose: only what upstream-auth.ts calls.
 */
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";

  interface ProviderContext {
    oidc: { params?: Record<string, unknown> };
  }

  interface ClientLike {
    clientId: string;
  }

  interface InteractionDetails {
    uid: string;
    prompt: { name: string };
    params: Record<string, unknown>;
  }

  class Grant {
    constructor(init: { accountId: string; clientId: string });
    addOIDCScope(scope: string): void;
    rejectOIDCScope(scope: string): void;
    save(): Promise<string>;
    destroy(): Promise<void>;
  }

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: "grant.success" | "grant.error", listener: (ctx: ProviderContext) => void): this;
    /** Model events (`access_token.saved`, `refresh_token.consumed`, …) pass the model instance. */
    on(event: string, listener: (model: { jti?: string; kind?: string }) => void): this;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
    Grant: typeof Grant & { find(id: string): Promise<Grant | undefined> };
    AccessToken: { find(value: string): Promise<{ destroy(): Promise<void> } | undefined> };
  }
  export type { ClientLike };
}
