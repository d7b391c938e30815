/**
 * The sandbox provider's state: its client credentials, signing key and the in-memory maps of pending
 * sign-ins, codes, tokens and notes — plus the two state changes shared by several endpoints (issuing a token
 * pair, dropping a grant).
 */
import { SignJWT, exportJWK, generateKeyPair, type JWK } from "jose";
import { hashSecret, mintSecret, randomSecret } from "../crypto/secrets.ts";
import { ExpiringMap } from "./expiring-map.ts";

export const DEMO_SCOPES = ["notes:read", "notes:write"] as const;
export const SCOPE_DESCRIPTIONS: Record<string, string> = {
  "notes:read": "Read your demo notes",
  "notes:write": "Create and delete your demo notes",
};

/** A sign-in page shown and not yet answered. */
export interface PendingSignIn {
  redirectUri: string;
  scopes: string[];
  state: string | null;
  challenge: string;
  csrf: string;
  /** The browser that loaded the page (cookie), so another browser cannot answer it. */
  browser: string;
}

/** An authorization code; kept after use until it expires, to detect a replay (RFC 6749 §4.1.2). */
export interface CodeGrant {
  redirectUri: string;
  scopes: string[];
  challenge: string;
  sub: string;
  name: string;
  grantId: string;
  used: boolean;
}

/** What an access or refresh token stands for. */
export interface TokenGrant {
  sub: string;
  name: string;
  scopes: string[];
  grantId: string;
}

export interface Note {
  id: string;
  text: string;
  created_at: string;
}

export interface DemoContext {
  /** `${baseUrl}/demo`, also the id_token issuer. */
  issuer: string;
  callbackUrl: string;
  clientId: string;
  clientSecret: string;
  secureCookies: boolean;
  accessTtlSeconds: number;
  pending: ExpiringMap<PendingSignIn>;
  codes: ExpiringMap<CodeGrant>;
  /** Keyed by the SHA-256 of the token. */
  access: ExpiringMap<TokenGrant>;
  refresh: ExpiringMap<TokenGrant>;
  /** Per demo user (sub). */
  notes: ExpiringMap<Map<string, Note>>;
  /** The sandbox MCP server's sessions (mcp.ts), each bound to the demo user who opened it. */
  mcpSessions: ExpiringMap<{ sub: string }>;
  signingKey: Promise<{ privateKey: CryptoKey; jwk: JWK }>;
}

export const TTL = {
  pendingMs: 10 * 60_000,
  codeMs: 60_000,
  refreshMs: 30 * 24 * 3600_000,
  notesMs: 24 * 3600_000,
} as const;

export function createContext(baseUrl: string, accessTtlSeconds: number): DemoContext {
  return {
    issuer: `${baseUrl}/demo`,
    callbackUrl: `${baseUrl}/ath/callback`,
    clientId: `demo_client_${randomSecret(12)}`,
    clientSecret: `demo_secret_${randomSecret(32)}`,
    secureCookies: baseUrl.startsWith("https:"),
    accessTtlSeconds,
    pending: new ExpiringMap(1000),
    codes: new ExpiringMap(1000),
    access: new ExpiringMap(10_000),
    refresh: new ExpiringMap(10_000),
    notes: new ExpiringMap(1000),
    mcpSessions: new ExpiringMap(1000),
    signingKey: createSigningKey(),
  };
}

export interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token: string;
  scope: string;
  id_token?: string;
}

/**
 * Mints an access + refresh token pair for `grant`, the access token limited to `accessScopes` (RFC 6749 §6:
 * the refresh token keeps the grant's scope); an id_token (ES256) when `withIdToken`.
 */
export async function issueTokens(
  ctx: DemoContext,
  grant: TokenGrant,
  withIdToken: boolean,
  accessScopes: string[] = grant.scopes,
): Promise<TokenResponse> {
  const access = mintSecret("demo_at_");
  const refresh = mintSecret("demo_rt_");
  ctx.access.set(hashSecret(access), { ...grant, scopes: accessScopes }, ctx.accessTtlSeconds * 1000);
  ctx.refresh.set(hashSecret(refresh), grant, TTL.refreshMs);
  const body: TokenResponse = {
    access_token: access,
    token_type: "Bearer",
    expires_in: ctx.accessTtlSeconds,
    refresh_token: refresh,
    scope: accessScopes.join(" "),
  };
  if (withIdToken) body.id_token = await signIdToken(ctx, grant);
  return body;
}

/** Drops every token of a grant (revoked refresh token, replayed code). */
export function revokeGrant(ctx: DemoContext, grantId: string): void {
  ctx.access.deleteWhere((g) => g.grantId === grantId);
  ctx.refresh.deleteWhere((g) => g.grantId === grantId);
}

// internal

async function createSigningKey(): Promise<{ privateKey: CryptoKey; jwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  const jwk = await exportJWK(publicKey);
  return { privateKey, jwk: { ...jwk, kid: randomSecret(8), alg: "ES256", use: "sig" } };
}

async function signIdToken(ctx: DemoContext, grant: TokenGrant): Promise<string> {
  const { privateKey, jwk } = await ctx.signingKey;
  return new SignJWT({ name: grant.name })
    .setProtectedHeader({ alg: "ES256", kid: jwk.kid, typ: "JWT" })
    .setIssuer(ctx.issuer)
    .setAudience(ctx.clientId)
    .setSubject(grant.sub)
    .setIssuedAt()
    .setExpirationTime(`${ctx.accessTtlSeconds}s`)
    .sign(privateKey);
}
