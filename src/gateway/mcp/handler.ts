/**
 * POST/GET/DELETE /mcp/{provider_id} — the MCP front door's Streamable HTTP endpoint (DESIGN §18, §21): both MCP wires
 * on one URL. The browser's origin is checked first (origin.ts); then the MCP client's token (ath's, bound to this
 * resource); a POST is read strictly (jsonrpc.ts) and handed to the wire it speaks (wire.ts) — 2025-11-25's sessions
 * (stateful.ts) or 2026-07-28's stateless requests (stateless.ts) — each of which judges its calls with the one call
 * decision and sends what passes through the one relay. Refusals are thrown (BearerChallenge, JsonRpcError, AthError):
 * the pipeline's boundary answers them.
 */
import { AthError } from "../../protocol/index.ts";
import { LONGEST_IDLE_TIMEOUT_S, type Call } from "../context.ts";
import { readRequestBounded } from "../http/body.ts";
import type { PreparedBody } from "../proxy/relay.ts";
import { reauthorize, requireMcpToken } from "./access.ts";
import type { Door } from "./forward.ts";
import { readMessages, type Posted } from "./jsonrpc.ts";
import { requireOwnOrigin } from "./origin.ts";
import { findMcpProvider } from "./providers.ts";
import { stateful } from "./stateful.ts";
import { stateless } from "./stateless.ts";
import { isStateless } from "./wire.ts";

export async function mcp(call: Call): Promise<Response> {
  const { gw, req } = call;
  const providerId = call.params.provider_id!;
  const record = await findMcpProvider(gw, providerId);
  if (!record) throw new AthError("NOT_FOUND", `No MCP server '${providerId}' is fronted here`);
  if (req.method !== "POST" && req.method !== "GET" && req.method !== "DELETE") {
    throw new AthError("METHOD_NOT_ALLOWED", `The MCP endpoint takes POST, GET and DELETE`, undefined, { headers: { allow: "POST, GET, DELETE" } });
  }
  requireOwnOrigin(gw, req);
  const { token, agent } = await requireMcpToken(gw, req, record);
  await call.identify({ client_id: token.client_id, provider_id: providerId });
  if (!token.grant_id) throw reauthorize(gw, record, "The sign-in at the upstream is gone; authorize again");
  // an authenticated MCP request may wait long: a GET stream, a long tool call
  gw.extendTimeout?.(req, LONGEST_IDLE_TIMEOUT_S);
  const door: Door = { gw, req, record, caller: { config: record.config, agent, token }, token };

  let posted: Posted = { batch: false, messages: [], text: "" };
  let body: PreparedBody = { data: null, replayable: true };
  if (req.method === "POST") {
    const bytes = await readRequestBounded(req, req.headers.get("content-length"), gw.opts.maxProxyBody, () =>
      new AthError("PAYLOAD_TOO_LARGE", `The request body exceeds ${gw.opts.maxProxyBody} bytes (--max-proxy-body)`, { limit: gw.opts.maxProxyBody }),
    );
    posted = readMessages(bytes);
    if (isStateless(req, posted)) return stateless(door, posted);
    body = { data: bytes, replayable: true };
  }
  return stateful(door, posted, body);
}
