/**
 * MCP's 2025-11-25 wire at `/mcp/{id}` (DESIGN §18): `initialize` opens a session (`Mcp-Session-Id`), every later
 * request names it; GET opens the server's stream, DELETE ends the session. The session is the upstream's own, bound by
 * ath to the client and the person who opened it (issue 35 #9: anyone else presenting its id gets MCP's 404 for an
 * unknown session); each call is judged by the one call decision (judge.ts) and, when not refused, forwarded with the
 * client's headers through the one relay (forward.ts). An upstream that refuses 2025's `initialize` (it speaks 2026
 * only) gets the session held by ath instead (held.ts).
 */
import { JsonRpcError } from "../http/errors.ts";
import { boundSession, declaresUrlElicitation, forgetSession, rememberSession } from "../domain/mcp-sessions.ts";
import { insufficientScope } from "./access.ts";
import { refusedStateful } from "./answers.ts";
import { note } from "./evidence.ts";
import { forward, type Door } from "./forward.ts";
import type { Posted } from "./jsonrpc.ts";
import { judge } from "./judge.ts";
import { notSent, type PreparedBody } from "../proxy/relay.ts";
import { MCP_ERROR } from "../../protocol/mcp-front-door.ts";
import { openHeld, serveHeld } from "./held.ts";
import { refusesStateful, rememberRefusesStateful } from "./upstream-wire.ts";

/** `posted` is null for GET and DELETE; `body` the POST's bytes as sent. */
export async function stateful(door: Door, posted: Posted, body: PreparedBody): Promise<Response> {
  const { gw, req, caller, token, record } = door;
  const session = await boundSession(gw, req, token);
  if (session === "unknown") {
    await note(gw, token, posted.messages, "unknown_session");
    throw new JsonRpcError(404, null, -32001, "Session not found", { reason: "unknown_session" });
  }
  let approved = false;
  let remaining: number | null = null;
  let unsent = (): void => undefined;
  if (req.method === "POST") {
    const judged = await judge(gw, caller, posted.messages, posted.batch);
    if (judged.stepUp) {
      await note(gw, token, posted.messages, "insufficient_scope");
      throw insufficientScope(gw, record, judged.stepUp);
    }
    if (judged.refusals.size) return refusedStateful(gw, token, posted, judged.refusals, session?.urlElicitation ?? false);
    ({ approved, remaining, unsent } = judged);
  }
  if (session?.held) return serveHeld(door, session, posted, { approved, remaining });
  const init = posted.messages.find((m) => m.call?.method === "initialize");
  if (init && !posted.batch && refusesStateful(gw, record.provider_id)) return openHeld(door, init);
  // counted but never sent (a store or upstream fault before it left): the counts go back (DESIGN §24)
  const res = await forward(door, posted, { method: req.method, body, once: approved, remaining, stateless: false }).catch((err: unknown) => {
    if (notSent(err)) unsent();
    throw err;
  });
  if (init && !posted.batch && res.status === 400) {
    // A 2026-only upstream refuses 2025's initialize (-32022): ath holds the session itself.
    const text = await res.text();
    if (refusesVersion(text)) {
      rememberRefusesStateful(gw, record.provider_id);
      return openHeld(door, init);
    }
    return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
  }
  const opened = res.headers.get("mcp-session-id");
  if (init && res.ok && opened) await rememberSession(gw, token, opened, declaresUrlElicitation(init.raw.params));
  if (req.method === "DELETE" && session && res.ok) await forgetSession(gw, token, session.id);
  return res;
}

// internal

/** Whether an upstream's answer is MCP's unsupported-protocol-version error (a 2026-only server refusing 2025). */
function refusesVersion(text: string): boolean {
  try {
    const m = JSON.parse(text) as { error?: { code?: unknown } };
    return m?.error?.code === MCP_ERROR.unsupportedVersion;
  } catch {
    return false;
  }
}
