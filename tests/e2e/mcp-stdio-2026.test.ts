/**
 * `ath mcp` on MCP's 2026-07-28 wire (DESIGN §12, §21): the official SDK 2.x `Client`, pinned to 2026-07-28, spawning
 * the compiled `dist/ath mcp` over stdio (its `server/discover` probe on a sibling process, as the SDK does) against a
 * real `dist/ath serve` with oidc-provider and the sample API — the same tools as on 2025-11-25 (tests/e2e/mcp.test.ts
 * drives those with the 1.x client): listed with their schemas, the person's consent picked up, the API called, a
 * refusal a tool error. On 2026 no server pushes requests to its host, so `ath_authorize` hands the consent URL back in
 * its result (as to a host without elicitation).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { consent } from "../helpers/agent.ts";
import { tempDir } from "../helpers/net.ts";
import { ATH_BIN } from "../helpers/processes.ts";
import { startWorld, type World } from "../helpers/world.ts";

let w: World;
let home: Awaited<ReturnType<typeof tempDir>>;
let client: Client;

beforeAll(async () => {
  w = await startWorld({ binary: true });
  home = await tempDir("mcp-2026-home");
  client = new Client({ name: "ath-e2e-host-2026", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  await client.connect(
    new StdioClientTransport({ command: ATH_BIN, args: ["mcp", "-g", w.baseUrl], env: { PATH: process.env.PATH ?? "", HOME: home.path, ATH_HOME: home.path, NO_COLOR: "1" }, stderr: "pipe" }),
  );
}, 120_000);
afterAll(async () => {
  await client?.close();
  await home?.remove();
  await w?.stop();
});

type Result = { isError?: boolean; structuredContent?: Record<string, any>; content: { type: string; text?: string }[]; _meta?: Record<string, any> };
const call = async (name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args }, { timeout: 60_000 })) as Result;

test("the host and ath mcp speak 2026-07-28: no initialize, the six tools listed with input and output schemas", async () => {
  expect(client.getProtocolEra()).toBe("modern");
  expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name).sort()).toEqual(["ath_authorize", "ath_providers", "ath_request", "ath_revoke", "ath_status", "ath_token"]);
  for (const t of tools) expect({ tool: t.name, input: t.inputSchema.type, output: t.outputSchema?.type }).toEqual({ tool: t.name, input: "object", output: "object" });
});

test("ath_providers, then ath_authorize hands back the consent URL, the person approves, ath_token saves the token and ath_request calls the API", async () => {
  const providers = await call("ath_providers");
  expect(providers.structuredContent?.providers.map((p: { provider_id: string }) => p.provider_id)).toContain("mail");
  const started = await call("ath_authorize", { provider: "mail", scopes: ["mail:read"] });
  expect(started.structuredContent).toMatchObject({ status: "pending", provider_id: "mail", scopes: ["mail:read"] });
  const c = await consent(String(started.structuredContent?.authorization_url));
  expect(c.page.body).toContain("Authorization complete");
  const done = await call("ath_token", { provider: "mail", wait_seconds: 30 });
  expect(done.structuredContent).toMatchObject({ status: "authorized", provider_id: "mail" });
  const r = await call("ath_request", { provider: "mail", method: "GET", path: "/v1/messages" });
  expect(r.isError).toBeUndefined();
  expect(r.structuredContent?.status).toBe(200);
});

test("a refusal is a tool error carrying its code, and the server keeps answering", async () => {
  const r = await call("ath_request", { provider: "nowhere", method: "GET", path: "/" });
  expect(r.isError).toBe(true);
  expect(r._meta?.["ath/error"]?.code).toBe("UNKNOWN_PROVIDER");
  expect((await call("ath_status")).isError).toBeUndefined();
});
