/**
 * ath's own `requestState` (DESIGN §21): the opaque string of an approval round on the 2026-07-28 wire. `ath1.` + an
 * AEAD seal (AES-256-GCM under the gateway's master key, crypto/sealing.ts) of what it binds — the approval id, the
 * client, the person, the provider, the request digest (§16), an expiry and a nonce — and, when the held request carried
 * the upstream's own requestState, that state, given back to the upstream on the approved retry. A state that does not
 * open, or opens for another client, person or provider, or past its expiry, is `request_state_invalid`; whether its
 * approval is pending, approved, spent or denied is the domain's to say (domain/approvals.ts `passRetry`).
 */
import { MCP_ERROR, REQUEST_STATE_PREFIX } from "../../protocol/mcp-front-door.ts";
import type { TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import type { StateClaim } from "../domain/call.ts";
import { JsonRpcError } from "../http/errors.ts";

/** An opened approval state: the claim the domain judges, and the upstream's own state it carried (null: none). */
export interface OpenedState extends StateClaim {
  kind: "approval";
  upstream: string | null;
}

/**
 * An opened bridge state (bridge-stateless.ts): a 2025 upstream asked the client for input mid-call; the answers given
 * so far, by key, and the digest of the request they were given for.
 */
export interface OpenedBridge {
  kind: "bridge";
  digest: string;
  answers: Record<string, unknown>;
}

/** Whether a requestState is ath's (anything else belongs to the upstream and passes through untouched). */
export function isOwnState(state: unknown): state is string {
  return typeof state === "string" && state.startsWith(REQUEST_STATE_PREFIX);
}

/** Seals a state for `token`'s caller: valid until `expiresAt` (the approval's expiry). */
export async function sealState(gw: Gateway, token: TokenRecord, s: { approvalId: string; digest: string; expiresAt: number; upstream: string | null }): Promise<string> {
  const body: Sealed = {
    k: "a",
    a: s.approvalId,
    c: token.client_id,
    u: token.user_id,
    p: token.provider_id,
    d: s.digest,
    x: s.expiresAt,
    n: crypto.randomUUID(),
    ...(s.upstream === null ? {} : { s: s.upstream }),
  };
  return REQUEST_STATE_PREFIX + (await gw.sealer.seal(JSON.stringify(body), AAD));
}

/** Seals a bridge round's state for `token`'s caller (valid BRIDGE_TTL_MS). */
export async function sealBridge(gw: Gateway, token: TokenRecord, s: { digest: string; answers: Record<string, unknown> }): Promise<string> {
  const body: Sealed = { k: "b", c: token.client_id, u: token.user_id, p: token.provider_id, d: s.digest, x: gw.now() + BRIDGE_TTL_MS, n: crypto.randomUUID(), r: s.answers };
  return REQUEST_STATE_PREFIX + (await gw.sealer.seal(JSON.stringify(body), AAD));
}

/** How long a client has to answer the input a bridged upstream asked for. */
export const BRIDGE_TTL_MS = 10 * 60 * 1000;

/** Opens a state ath minted for this caller, else throws the JSON-RPC error `request_state_invalid` (-32602, nothing sent). */
export async function openState(gw: Gateway, token: TokenRecord, state: string, id: unknown): Promise<OpenedState | OpenedBridge> {
  let body: Sealed;
  try {
    const sealed = state.slice(REQUEST_STATE_PREFIX.length);
    // one spelling per state: base64url decoders skip a stray trailing character, so a state is taken only as minted
    if (!sealed.split(".").every((part, i) => i === 0 || Buffer.from(part, "base64url").toString("base64url") === part)) throw new TypeError("not canonical");
    body = JSON.parse(await gw.sealer.open(sealed, AAD)) as Sealed;
  } catch {
    throw invalid(id, "The requestState was not minted by this gateway, or was altered");
  }
  if (body.c !== token.client_id || body.u !== token.user_id || body.p !== token.provider_id) throw invalid(id, "The requestState was minted for another client, person or provider");
  if (!(body.x > gw.now())) throw invalid(id, "The requestState expired");
  if (body.k === "b") return { kind: "bridge", digest: body.d, answers: body.r ?? {} };
  return { kind: "approval", approvalId: body.a ?? "", digest: body.d, upstream: typeof body.s === "string" ? body.s : null };
}

/** The JSON-RPC error of a retry ath refuses (data.reason: request_state_invalid | request_changed | request_state_used). */
export function stateRefusal(id: unknown, reason: string, message: string): JsonRpcError {
  return new JsonRpcError(200, id, MCP_ERROR.invalidParams, message, { ath_error: "INVALID_REQUEST", reason });
}

// internal

/** Associated data: a sealed state cannot be passed off as any other sealed value of the gateway. */
const AAD = "mcp:request-state:v1";

interface Sealed {
  /** a: an approval round; b: a bridge round. */
  k: "a" | "b";
  a?: string;
  c: string;
  u: string;
  p: string;
  d: string;
  x: number;
  n: string;
  s?: string;
  r?: Record<string, unknown>;
}

function invalid(id: unknown, message: string): JsonRpcError {
  return stateRefusal(id, "request_state_invalid", message);
}
