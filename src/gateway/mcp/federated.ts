/**
 * `{base_url}/mcp` and `{base_url}/mcp/g/{group}` (DESIGN §22): one MCP server in front of many, both wires on one URL.
 * The browser's origin is checked first (origin.ts); then the front-door token — bound to this URL (RFC 8707), not to
 * any member's — and the request is answered by ath as a virtual server: `initialize` (2025: a session ath holds, bound
 * to the client and the person) and `server/discover` (2026) from the members' own, `ping`, the lists as the union of
 * the members' (federated-lists.ts); a call is routed by its name's prefix (a resource by its URI) to its member and
 * judged and sent there as at `/mcp/{id}` (federated-members.ts); `{prefix}connect` connects a member
 * (federated-connect.ts).
 */
import { AthError } from "../../protocol/index.ts";
import { MCP_ERROR, MCP_META, MCP_WIRE } from "../../protocol/mcp-front-door.ts";
import type { TokenRecord } from "../../store/types.ts";
import { LONGEST_IDLE_TIMEOUT_S, type Call, type Gateway } from "../context.ts";
import { mintSecret } from "../crypto/secrets.ts";
import { boundSession, declaresUrlElicitation, forgetSession, rememberSession, updateHeld } from "../domain/mcp-sessions.ts";
import { readRequestBounded } from "../http/body.ts";
import { giveInput } from "../domain/mcp-session-inputs.ts";
import { JSON_RPC, JsonRpcError } from "../http/errors.ts";
import { requireTokenFor, resourcePath, type ResourceDoor } from "./access.ts";
import { CONNECT_INPUT, connectStream, federatedConnect } from "./federated-connect.ts";
import { federatedListen } from "./federated-listen.ts";
import { askMember, federatedList, gather, LISTS, UNAVAILABLE } from "./federated-lists.ts";
import { memberDoor, notConnected, sendToMember, type Fed } from "./federated-members.ts";
import { federationMetadataUrl, federationPath, federationResource, findFederation, routeName, routeUri, type Federation, type Member } from "./federation.ts";
import { heldSessionOf } from "./held.ts";
import { checkStandardHeaders } from "./headers.ts";
import { readMessages, type Message, type Posted } from "./jsonrpc.ts";
import { requireOwnOrigin } from "./origin.ts";
import { advertisedScopes } from "./providers.ts";
import { isObject } from "./sse.ts";
import { isStateless } from "./wire.ts";


export async function federatedMcp(call: Call): Promise<Response> {
  const { gw, req } = call;
  const group = call.params.group ?? null;
  const f = await findFederation(gw, group);
  if (!f) throw new AthError("NOT_FOUND", group === null ? "No MCP server is fronted here" : `No MCP group '${group}' is served here`);
  if (req.method !== "POST" && req.method !== "GET" && req.method !== "DELETE") {
    throw new AthError("METHOD_NOT_ALLOWED", `The MCP endpoint takes POST, GET and DELETE`, undefined, { headers: { allow: "POST, GET, DELETE" } });
  }
  requireOwnOrigin(gw, req);
  const { token, agent } = await requireTokenFor(gw, req, resourceDoor(gw, f));
  await call.identify({ client_id: token.client_id });
  gw.extendTimeout?.(req, LONGEST_IDLE_TIMEOUT_S);
  const fed: Fed = { gw, req, f, token, agent, held: null, urlElicitation: false };
  if (req.method !== "POST") return stateful(fed, null);
  const bytes = await readRequestBounded(req, req.headers.get("content-length"), gw.opts.maxProxyBody, () =>
    new AthError("PAYLOAD_TOO_LARGE", `The request body exceeds ${gw.opts.maxProxyBody} bytes (--max-proxy-body)`, { limit: gw.opts.maxProxyBody }),
  );
  const posted = readMessages(bytes);
  return isStateless(req, posted) ? stateless(fed, posted) : stateful(fed, posted);
}

/** The federated URL as a resource server: its resource, its metadata, the scopes a 401 names (the first member's). */
export function resourceDoor(gw: Gateway, f: Federation): ResourceDoor {
  const resource = federationResource(gw, f.group);
  return {
    resource,
    metadata: federationMetadataUrl(gw, f.group),
    scope: advertisedScopes(f.members[0]!.record).join(" "),
    opens: (t) => t.resource != null && resourcePath(t.resource) === federationPath(f.group),
  };
}

// internal

/** The 2026-07-28 wire: one message per POST, its envelope and headers checked, answered by ath or by its member. */
async function stateless(fed: Fed, posted: Posted): Promise<Response> {
  if (posted.batch || posted.messages.length !== 1) throw new JsonRpcError(400, null, JSON_RPC.invalidRequest, "Invalid Request: a 2026-07-28 POST carries one JSON-RPC message");
  const m = posted.messages[0]!;
  if (m.call === null) throw new JsonRpcError(400, null, JSON_RPC.invalidRequest, "Invalid Request: the 2026-07-28 wire takes no JSON-RPC responses from the client");
  checkStandardHeaders(fed.req.headers, m);
  if (m.id === undefined) return new Response(null, { status: 202 });
  // the 2026 envelope, checked as a 2026 server checks it (-32602 without it, -32022 for another version)
  const meta = isObject(m.raw.params) && isObject(m.raw.params._meta) ? m.raw.params._meta : null;
  const version = meta?.[MCP_META.protocolVersion];
  if (meta === null || typeof version !== "string" || !isObject(meta[MCP_META.clientCapabilities])) {
    throw new JsonRpcError(400, m.id ?? null, MCP_ERROR.invalidParams, `Invalid params: _meta must carry ${MCP_META.protocolVersion} and ${MCP_META.clientCapabilities}`);
  }
  if (version !== MCP_WIRE.stateless) {
    throw new JsonRpcError(400, m.id ?? null, MCP_ERROR.unsupportedVersion, `Unsupported protocol version: ${version}`, { supported: [MCP_WIRE.stateless], requested: version });
  }
  const method = m.call.method;
  if (method === "server/discover") return Response.json({ jsonrpc: "2.0", id: m.id, result: { supportedVersions: [MCP_WIRE.stateless], ...(await discovered(fed, m)), resultType: "complete", ttlMs: 0, cacheScope: "private" } });
  if (method === "subscriptions/listen") return federatedListen(fed, m, posted.text);
  // 2026 has no initialize, ping, logging/setLevel or resources/(un)subscribe: 404 -32601, as for any unknown method
  if (REMOVED_2026.has(method) || !SERVED.has(method)) throw new JsonRpcError(404, m.id, MCP_ERROR.methodNotFound, `Method not found: ${method}`);
  return serve(fed, m, posted.text);
}

/** What a 2026 request may ask of the federated URL besides server/discover and subscriptions/listen. */
const SERVED = new Set(["tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list", "resources/templates/list", "resources/read", "completion/complete"]);
const REMOVED_2026 = new Set(["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"]);

/** The 2025-11-25 wire: a session ath holds (`initialize` opens it), GET its stream, DELETE its end. */
async function stateful(fed: Fed, posted: Posted | null): Promise<Response> {
  const { gw, req } = fed;
  const keyed = sessionToken(fed);
  const init = posted?.messages.find((m) => m.call?.method === "initialize");
  if (posted && init) {
    if (posted.batch) throw new JsonRpcError(400, null, JSON_RPC.invalidRequest, "Invalid Request: initialize must be sent alone");
    return openSession(fed, keyed, init);
  }
  const session = await boundSession(gw, req, keyed);
  if (session === "unknown" || (session !== null && session.held === null)) throw new JsonRpcError(404, null, -32001, "Session not found", { reason: "unknown_session" });
  if (session === null) throw new JsonRpcError(400, null, JSON_RPC.invalidRequest, "Bad Request: Mcp-Session-Id header is required");
  if (req.method === "DELETE") {
    await forgetSession(gw, keyed, session.id);
    return new Response(null, { status: 200 });
  }
  // the server's stream: the tool list changed when the person connects a member
  if (req.method === "GET") return connectStream({ ...fed, held: session.held, urlElicitation: session.urlElicitation });
  if (posted!.batch || posted!.messages.length !== 1) throw new JsonRpcError(400, null, JSON_RPC.invalidRequest, "Invalid Request: one JSON-RPC message per POST");
  const m = posted!.messages[0]!;
  // the client's answer to a request ath made of it mid-call (federated-members.ts), on any instance
  if (m.call === null) {
    if (m.raw.id !== undefined) await giveInput(gw, keyed, session.id, String(m.raw.id), m.raw);
    return new Response(null, { status: 202 });
  }
  if (m.id === undefined) return new Response(null, { status: 202 });
  const held = session.held!;
  const onSession: Fed = { ...fed, held, urlElicitation: session.urlElicitation, session: { id: session.id, keyed } };
  const ok = (result: Record<string, unknown> = {}) => Response.json({ jsonrpc: "2.0", id: m.id, result });
  const params = isObject(m.raw.params) ? m.raw.params : {};
  if (m.call.method === "logging/setLevel") {
    await updateHeld(gw, keyed, session.id, { ...held, logLevel: typeof params.level === "string" ? params.level : null });
    return ok();
  }
  // 2026 has no subscribe: kept on the session, as held.ts keeps them (the URI as the client named it)
  if (m.call.method === "resources/subscribe" || m.call.method === "resources/unsubscribe") {
    const uri = typeof params.uri === "string" ? params.uri : null;
    if (uri === null || !routeUri(fed.f, uri)) throw new JsonRpcError(200, m.id, MCP_ERROR.invalidParams, `Unknown resource: ${uri}`);
    const rest = held.subscriptions.filter((u) => u !== uri);
    await updateHeld(gw, keyed, session.id, { ...held, subscriptions: m.call.method === "resources/subscribe" ? [...rest, uri] : rest });
    return ok();
  }
  return serve(onSession, m, posted!.text);
}

/** A request of either wire that is not the wire's own: answered by ath, or routed to its member. */
async function serve(fed: Fed, m: Message, text: string): Promise<Response> {
  const method = m.call!.method;
  const params = isObject(m.raw.params) ? m.raw.params : {};
  const answer = (result: Record<string, unknown>) => Response.json({ jsonrpc: "2.0", id: m.id, result });
  if (method === "ping") return answer({});
  if (method in LISTS) return answer({ ...(await federatedList(fed, m, method)), ...(fed.held ? {} : { resultType: "complete" }) });
  if (method === "tools/call" || method === "prompts/get") {
    const name = typeof params.name === "string" ? params.name : "";
    const routed = routeName(fed.f, name);
    if (!routed) throw new JsonRpcError(200, m.id, MCP_ERROR.invalidParams, `Unknown ${method === "tools/call" ? "tool" : "prompt"}: ${name}`);
    const door = await memberDoor(fed, routed.member);
    // `{prefix}connect` while the member is missing — and its 2026 retry, answered by ath even once connected
    const retry = isObject(params.inputResponses) && CONNECT_INPUT in params.inputResponses;
    if (method === "tools/call" && routed.name === "connect" && (door === null || retry)) return federatedConnect(fed, routed.member, m);
    if (!door) return Response.json(notConnected(m, routed.member));
    return sendToMember(fed, door, m, text, { name: JSON.stringify(routed.name) });
  }
  if (method === "resources/read") {
    const uri = typeof params.uri === "string" ? params.uri : "";
    return toMemberByUri(fed, m, text, uri, (_member, upstream) => ({ uri: JSON.stringify(upstream) }), true);
  }
  if (method === "completion/complete" && isObject(params.ref)) {
    const ref = params.ref;
    if (typeof ref.uri === "string") return toMemberByUri(fed, m, text, ref.uri, (_m, upstream) => ({ ref: JSON.stringify({ ...ref, uri: upstream }) }), false);
    const routed = routeName(fed.f, typeof ref.name === "string" ? ref.name : "");
    if (!routed) throw new JsonRpcError(200, m.id, MCP_ERROR.invalidParams, "Unknown prompt");
    const door = await memberDoor(fed, routed.member);
    if (!door) return Response.json(notConnected(m, routed.member));
    return sendToMember(fed, door, m, text, { ref: JSON.stringify({ ...ref, name: routed.name }) });
  }
  throw new JsonRpcError(fed.held ? 200 : 404, m.id, MCP_ERROR.methodNotFound, `Method not found: ${method}`);
}

/** A request naming a resource URI, sent to the member the URI routes to; a read answers with the URI as asked. */
async function toMemberByUri(fed: Fed, m: Message, text: string, uri: string, set: (member: Member, upstream: string) => Record<string, string>, read: boolean): Promise<Response> {
  const routed = routeUri(fed.f, uri);
  if (!routed) throw new JsonRpcError(200, m.id, MCP_ERROR.invalidParams, `Unknown resource: ${uri}`);
  const door = await memberDoor(fed, routed.member);
  if (!door) return Response.json(notConnected(m, routed.member));
  const shape = (r: Record<string, unknown>) =>
    read && Array.isArray(r.contents) ? { ...r, contents: r.contents.map((c: unknown) => (isObject(c) && c.uri === routed.uri ? { ...c, uri } : c)) } : r;
  return sendToMember(fed, door, m, text, set(routed.member, routed.uri), read ? shape : undefined);
}

/** `initialize` at the federated URL: a session of ath's, answered from the members' own. */
async function openSession(fed: Fed, keyed: TokenRecord, init: Message): Promise<Response> {
  const params = isObject(init.raw.params) ? init.raw.params : {};
  const held = heldSessionOf(init);
  const sid = mintSecret("ath-mcpf-", 18);
  await rememberSession(fed.gw, keyed, sid, declaresUrlElicitation(params), held);
  const found = await discovered({ ...fed, held }, init);
  return Response.json({ jsonrpc: "2.0", id: init.id, result: { protocolVersion: held.protocolVersion, ...found } }, { headers: { "mcp-session-id": sid } });
}

/**
 * What the virtual server says it is: one member's own capabilities, server info and instructions when the group has
 * one member (it is that server); else ath, with the union of the connected members' capabilities. Tools are always
 * offered (`{prefix}connect`), their list said to change while a member is missing.
 */
async function discovered(fed: Fed, m: Message): Promise<Record<string, unknown>> {
  const gathered = await gather(fed, (_member, door) => askMember({ ...fed }, door, m, "server/discover", {}));
  const capabilities: Record<string, unknown> = {};
  const unavailable: { provider_id: string; reason: string }[] = [];
  let missing = false;
  for (const g of gathered) {
    if (!g.connected) missing = true;
    else if ("unavailable" in g) unavailable.push({ provider_id: g.member.record.provider_id, reason: g.unavailable });
    else if (isObject(g.result.capabilities)) for (const [k, v] of Object.entries(g.result.capabilities)) capabilities[k] = isObject(v) && isObject(capabilities[k]) ? { ...(capabilities[k] as object), ...v } : v;
  }
  if (missing || fed.f.members.length > 1) capabilities.tools = { ...(isObject(capabilities.tools) ? capabilities.tools : {}), listChanged: true };
  const only = gathered.length === 1 && gathered[0]!.connected && "result" in gathered[0]! ? gathered[0].result : null;
  const meta = only && isObject(only._meta) ? only._meta : {};
  const serverInfo = only && isObject(meta[MCP_META.serverInfo]) ? meta[MCP_META.serverInfo] : { name: `ath${federationPath(fed.f.group)}`, version: fed.gw.opts.version };
  return {
    capabilities,
    ...(fed.held ? { serverInfo } : { _meta: { [MCP_META.serverInfo]: serverInfo, ...(unavailable.length ? { [UNAVAILABLE]: unavailable } : {}) } }),
    ...(only && typeof only.instructions === "string" ? { instructions: only.instructions } : {}),
  };
}

/** The token sessions of this URL are kept under: sessions of one URL are never found at another. */
function sessionToken(fed: Fed): TokenRecord {
  return { ...fed.token, provider_id: `federated${federationPath(fed.f.group)}` };
}

