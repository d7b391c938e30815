/** The sandbox provider as a whole: its provider entry and its routing. */
import { describe, expect, test } from "bun:test";
import { createDemo } from "../../../../src/gateway/demo/index.ts";
import { ProviderConfig } from "../../../../src/protocol/index.ts";
import { BASE, api } from "../../../helpers/demo.ts";

describe("the sandbox provider's entry", () => {
  test("the sandbox's provider entry is valid, with absolute endpoints under the base URL and fresh credentials at every start", () => {
    const a = createDemo({ baseUrl: BASE });
    const b = createDemo({ baseUrl: BASE });
    const cfg = ProviderConfig.parse(a.config);
    expect(a.providerId).toBe("demo");
    expect(cfg.display_name).toBe("Demo Notes (sandbox)");
    expect(cfg.available_scopes).toEqual(["notes:read", "notes:write"]);
    expect(cfg.authorize_endpoint).toBe(`${BASE}/demo/oauth/authorize`);
    expect(cfg.token_endpoint).toBe(`${BASE}/demo/oauth/token`);
    expect(cfg.api_base_url).toBe(`${BASE}/demo/api`);
    // the sandbox MCP server, fronted at /mcp/demo: its tools under the same scopes as the API's paths
    expect(cfg.mcp).toEqual({ url: `${BASE}/demo/mcp` });
    expect(cfg.scope_rules).toEqual({
      "notes:read": ["GET /notes", "GET /notes/*", "MCP tools/call list_notes"],
      "notes:write": ["POST /notes", "DELETE /notes/*", "MCP tools/call add_note", "MCP tools/call delete_note"],
    });
    expect(cfg.scope_descriptions?.["notes:read"]).toBeTruthy();
    expect(a.config.client_secret).not.toBe(b.config.client_secret);
    expect(a.config.client_id).not.toBe(b.config.client_id);
  });
});

describe("routing", () => {
  test("unknown paths are 404 and wrong methods 405, as JSON", async () => {
    const demo = createDemo({ baseUrl: BASE });
    expect((await demo.fetch(new Request(`${BASE}/demo/nope`))).status).toBe(404);
    expect((await demo.fetch(new Request(`${BASE}/demo/oauth/token`))).status).toBe(405);
    const del = await api(demo, "PUT", "/notes");
    expect([del.status, del.headers.get("allow")]).toEqual([405, "GET, POST"]);
  });
});
