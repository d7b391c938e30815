/**
 * The MCP front door in process (tests/helpers/in-process.ts): the reference MCP server on the SDK 2.x as the
 * in-process network's `http://mcp.test` host (tests/helpers/reference-mcp), fronted as provider `mail` by the scripted
 * OAuth provider; MCP clients' tokens got by the real code grant — registration, ath's consent page, the upstream's —
 * each browser a person of its own (the scripted provider names nobody: the gateway keeps a pseudonym per browser); and
 * 2026-07-28 requests as a conformant client sends them (envelope in `_meta`, standard headers).
 */
import { MCP_META, MCP_WIRE } from "../../src/protocol/mcp-front-door.ts";
import type { ProviderConfigInput } from "../../src/protocol/index.ts";
import { call, consent } from "./agent.ts";
import { Browser } from "./browser.ts";
import { BASE, scriptedGateway, type InProcess, type InProcessOptions } from "./in-process.ts";
import { referenceHandler, type ReferenceHandler, type Wires } from "./reference-mcp/serve.ts";

export const PROVIDER = "mail";
export const RESOURCE = `${BASE}/mcp/${PROVIDER}`;
const REDIRECT = "http://127.0.0.1:33418/callback";

export interface McpWorld {
  g: InProcess;
  upstream: ReferenceHandler;
  close(): Promise<void>;
}

/** The gateway with `mail` in front of the reference server; `over` adds to the provider entry (rules). */
export async function mcpWorld(o: { wires?: Wires; over?: Partial<ProviderConfigInput>; options?: InProcessOptions } = {}): Promise<McpWorld> {
  const upstream = referenceHandler(o.wires ?? "both");
  const { g } = await scriptedGateway((p) => ({ [PROVIDER]: p.config({ mcp: { url: "http://mcp.test/mcp" }, ...o.over }) }), {
    ...o.options,
    hosts: { "http://mcp.test": (req) => upstream.fetch(req), ...o.options?.hosts },
  });
  return {
    g,
    upstream,
    async close() {
      await g.close();
      await upstream.close();
    },
  };
}

export interface McpGrant {
  clientId: string;
  token: string;
  browser: Browser;
}

/** A token for `clientId` (registered now when absent) and the person of `browser` (a new one when absent). */
export async function mcpGrant(g: InProcess, o: { clientId?: string; browser?: Browser; scopes?: string[] } = {}): Promise<McpGrant> {
  const net = { baseUrl: BASE, fetch: (req: Request) => g.fetch(req) };
  let clientId = o.clientId;
  if (clientId === undefined) {
    const reg = await call(`${BASE}/oauth/register`, { json: { client_name: "Test MCP Client", redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" }, fetch: net.fetch });
    clientId = String(reg.json.client_id);
  }
  const browser = o.browser ?? new Browser(net.fetch);
  const verifier = crypto.randomUUID().replaceAll("-", "") + crypto.randomUUID().replaceAll("-", "");
  const url = new URL(`${BASE}/oauth/authorize`);
  const params = {
    response_type: "code", client_id: clientId, redirect_uri: REDIRECT, code_challenge: new Bun.CryptoHasher("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256", state: "s", resource: RESOURCE, scope: (o.scopes ?? ["mail:read", "mail:send"]).join(" "),
  };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  const consented = await consent(url.href, { browser, redirectUri: REDIRECT });
  if (!consented.code) throw new Error(`no code: ${consented.page.status} ${consented.page.url}`);
  const t = await call(`${BASE}/oauth/token`, {
    form: { grant_type: "authorization_code", code: consented.code, code_verifier: verifier, client_id: clientId, redirect_uri: REDIRECT, resource: RESOURCE },
    fetch: net.fetch,
  });
  if (t.status !== 200) throw new Error(`token: ${t.status} ${t.text}`);
  return { clientId, token: String(t.json.access_token), browser };
}

/** The 2026 envelope a conformant client puts in `_meta` (`capabilities`: what it declares). */
export function envelope(capabilities: Record<string, unknown> = {}): Record<string, unknown> {
  return { [MCP_META.protocolVersion]: MCP_WIRE.stateless, [MCP_META.clientCapabilities]: capabilities, [MCP_META.clientInfo]: { name: "test", version: "1" } };
}

/** The standard headers of a 2026 request for `method` (and `name`, for tools/call, prompts/get, resources/read). */
export function standard(method: string, name?: string): Record<string, string> {
  return { "mcp-protocol-version": MCP_WIRE.stateless, "mcp-method": method, ...(name === undefined ? {} : { "mcp-name": name }) };
}

/** POSTs `body` (an object, or raw text) to `/mcp/mail` with `token`; the answer parsed (JSON or the event stream's last message). */
export async function post(g: InProcess, token: string | null, body: unknown, headers: Record<string, string> = {}) {
  const res = await g.fetch(`/mcp/${PROVIDER}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: Record<string, any> = {};
  try {
    json = JSON.parse(text) as Record<string, any>;
  } catch {
    const data = text.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).filter(Boolean);
    json = data.length ? (JSON.parse(data[data.length - 1]!) as Record<string, any>) : {};
  }
  return { status: res.status, headers: res.headers, json, text };
}

/** A 2026 tools/call of `tool` with `args`, its headers right unless `headers` says otherwise. */
export function toolCall(g: InProcess, token: string, tool: string, args: Record<string, unknown>, o: { id?: number | string; params?: Record<string, unknown>; headers?: Record<string, string>; capabilities?: Record<string, unknown> } = {}) {
  const body = { jsonrpc: "2.0", id: o.id ?? 1, method: "tools/call", params: { name: tool, arguments: args, ...o.params, _meta: envelope(o.capabilities) } };
  // header names are case-insensitive: an override replaces the standard header, whatever its case
  const overrides = Object.fromEntries(Object.entries(o.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  return post(g, token, body, { ...standard("tools/call", tool), ...overrides });
}
