/**
 * A 2025-11-25 session ath opens at an upstream on a 2026 client's behalf (DESIGN §21, bridging): `initialize` with
 * the capabilities the client declares in its requests, then `notifications/initialized`; kept per (provider, person,
 * client, capabilities) in the store (domain/mcp-upstream-sessions.ts). `onSession` sends one message on it and, when
 * the upstream answers 404 (it forgot the session), opens a new one and sends again — the upstream did not act on a
 * request it answered 404.
 */
import { AthError } from "../../protocol/index.ts";
import { MCP_WIRE } from "../../protocol/mcp-front-door.ts";
import { heldUpstreamSession, holdUpstreamSession, releaseUpstreamSession, type UpstreamSession } from "../domain/mcp-upstream-sessions.ts";
import type { HeaderFields } from "../proxy/headers.ts";
import type { PreparedBody } from "../proxy/relay.ts";
import { sendUpstream, type Door } from "./forward.ts";
import type { Message } from "./jsonrpc.ts";
import { CLIENT_INFO, rpc } from "./upstream-calls.ts";

export type { UpstreamSession };

/** The session for the client's `capabilities` (held, or opened now). */
export async function sessionFor(door: Door, capabilities: Record<string, unknown>): Promise<UpstreamSession> {
  return (await heldUpstreamSession(door.gw, door.token, variantOf(capabilities))) ?? open(door, capabilities, true);
}

/** A session of its own, kept by nobody (a stream's: a 2025 session has one stream); end it with `endSession`. */
export function openSession(door: Door, capabilities: Record<string, unknown>): Promise<UpstreamSession> {
  return open(door, capabilities, false);
}

/** Ends a session ath opened (DELETE), whatever the upstream answers. */
export async function endSession(door: Door, s: UpstreamSession): Promise<void> {
  if (s.id === null) return;
  const res = await sendUpstream(door, [], { method: "DELETE", body: { data: null, replayable: true }, headers: sessionHeaders(s), once: false, remaining: null, stateless: false }).catch(() => null);
  await res?.body?.cancel();
}

/**
 * Sends `text` (one JSON-RPC message, or a response to the upstream's request) on the session; `messages` are what the
 * audit records (none for ath's own). Returns the upstream's answer and the session it went on.
 */
export async function onSession(
  door: Door,
  capabilities: Record<string, unknown>,
  text: string,
  o: { messages?: readonly Message[]; once?: boolean; remaining?: number | null } = {},
): Promise<{ res: Response; session: UpstreamSession }> {
  let session = await sessionFor(door, capabilities);
  for (let attempt = 0; ; attempt++) {
    const body: PreparedBody = { data: new TextEncoder().encode(text).buffer as ArrayBuffer, replayable: true };
    const res = await sendUpstream(door, o.messages ?? [], { method: "POST", body, headers: sessionHeaders(session), once: o.once ?? false, remaining: o.remaining ?? null, stateless: false });
    if (res.status !== 404 || session.id === null || attempt > 0) return { res, session };
    await res.body?.cancel();
    await releaseUpstreamSession(door.gw, door.token, variantOf(capabilities), session);
    session = await open(door, capabilities, true);
  }
}

/** The headers of a request on the session. */
export function sessionHeaders(s: UpstreamSession): HeaderFields {
  const version = typeof s.opened.protocolVersion === "string" ? s.opened.protocolVersion : MCP_WIRE.stateful;
  return {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": version,
    ...(s.id === null ? {} : { "mcp-session-id": s.id }),
  };
}

// internal

async function open(door: Door, capabilities: Record<string, unknown>, keep: boolean): Promise<UpstreamSession> {
  const init = { jsonrpc: "2.0", id: "ath-initialize", method: "initialize", params: { protocolVersion: MCP_WIRE.stateful, capabilities, clientInfo: CLIENT_INFO } };
  const headers: HeaderFields = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  const { answer, res } = await rpc(door, init, headers);
  if (answer === null || !("result" in answer)) {
    throw new AthError("UPSTREAM_UNAVAILABLE", "The MCP server did not open a session for ath (initialize failed)", { reason: "upstream_initialize_failed", status: res.status });
  }
  const id = res.headers.get("mcp-session-id");
  const session = keep ? await holdUpstreamSession(door.gw, door.token, variantOf(capabilities), id, answer.result) : { id, opened: answer.result, sealed: "" };
  const initialized = new TextEncoder().encode(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
  const ack = await sendUpstream(door, [], { method: "POST", body: { data: initialized.buffer as ArrayBuffer, replayable: true }, headers: sessionHeaders(session), once: false, remaining: null, stateless: false });
  await ack.body?.cancel();
  return session;
}

/** The session's variant: a hash of the capabilities as JSON with sorted keys (the same set, however ordered). */
function variantOf(capabilities: Record<string, unknown>): string {
  return new Bun.CryptoHasher("sha256").update(sorted(capabilities)).digest("base64url");
}

function sorted(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v) ?? "null";
  if (Array.isArray(v)) return `[${v.map(sorted).join(",")}]`;
  return `{${Object.keys(v)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${sorted((v as Record<string, unknown>)[k])}`)
    .join(",")}}`;
}
