/** Native mode (`--mode native --service <url>`): the service's ath-app.json names the app, which stands in for the provider. */
import { describe, expect, test } from "bun:test";
import { GW, codeFor, cliFixture } from "../../helpers/cli-harness.ts";

const fx = cliFixture();
const ath = fx.ath;

describe("native mode (--mode native --service <url>)", () => {
  test("discovers ath-app.json, defaults the provider to its app_id and calls api_base directly", async () => {
    const native = ["--mode", "native", "--service", GW];
    const reg = await ath(["register", ...native]);
    expect(reg.code).toBe(0);
    expect(fx.gw.requests.find((q) => q.path === "/ath/agents/register")!.body.requested_providers).toEqual([{ provider_id: "notes", scopes: ["notes:read", "notes:write"] }]);
    const a = await ath(["authorize", ...native, "--no-wait", "--format", "json"]);
    expect(a.code).toBe(0);
    expect(fx.gw.requests.find((q) => q.path === "/ath/authorize")!.body.provider_id).toBe("notes");
    const t = await ath(["token", ...native, "--code", codeFor(JSON.parse(a.stdout).ath_session_id)]);
    expect(t.code).toBe(0);
    const p = await ath(["proxy", ...native, "GET", "/notes?limit=1", "--format", "json"]);
    expect(p.code).toBe(0);
    expect(fx.gw.proxied[0]!.path).toBe("/api/notes?limit=1");
    expect(fx.gw.proxied[0]!.headers.get("authorization")).toMatch(/^Bearer ath_tk_/);
    expect(fx.gw.requests.some((q) => q.path.startsWith("/ath/proxy/"))).toBe(false);
  });

  test("proxy: the service refusing the token (an ATH error body, no X-ATH-Error) exits 4; its API's other errors exit 1", async () => {
    const native = ["--mode", "native", "--service", GW];
    expect((await ath(["register", ...native])).code).toBe(0);
    const a = await ath(["authorize", ...native, "--no-wait", "--format", "json"]);
    expect((await ath(["token", ...native, "--code", codeFor(JSON.parse(a.stdout).ath_session_id)])).code).toBe(0);
    const missing = await ath(["proxy", ...native, "GET", "/missing"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("ath: HTTP 404\n");
    const saved = Object.values((await fx.credentials()).gateways[GW].agents)[0] as { tokens: { notes: { access_token: string } } };
    await fx.gw.fetch(`${GW}/ath/revoke`, { method: "POST", body: new URLSearchParams({ token: saved.tokens.notes.access_token }) });
    const refused = await ath(["proxy", ...native, "GET", "/notes"]);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain("401 TOKEN_INVALID");
  });
});
