/**
 * Native mode (`--mode native --service <url>`) against the real gateway in process serving as a native ATH service
 * (its sandbox app): ath-app.json names the app, which stands in for the provider; the API is called at api_base.
 */
import { describe, expect, test } from "bun:test";
import { GATEWAY, cliOnGateway } from "../../helpers/cli-in-process.ts";
import { consented } from "../../helpers/in-process.ts";

const fx = cliOnGateway({ mode: "native" });
const ath = fx.ath;
const native = ["--mode", "native", "--service", GATEWAY];

/** register → authorize → the person consents → token, all without naming a provider. */
async function authorized(): Promise<void> {
  expect((await ath(["register", ...native])).code).toBe(0);
  const a = await ath(["authorize", ...native, "--no-wait", "--format", "json"]);
  expect(a.code).toBe(0);
  const code = await consented(fx.g.browser(), JSON.parse(a.stdout).authorization_url);
  expect((await ath(["token", ...native, "--code", code])).code).toBe(0);
}

describe("native mode (--mode native --service <url>)", () => {
  test("discovers ath-app.json, defaults the provider to its app_id and calls api_base directly", async () => {
    await authorized();
    const saved = Object.values((await fx.credentials()).gateways[GATEWAY].agents)[0] as { tokens: Record<string, unknown>; approved_providers: { provider_id: string }[] };
    expect(Object.keys(saved.tokens)).toEqual(["demo"]);
    expect(saved.approved_providers.map((p) => p.provider_id)).toEqual(["demo"]);
    const before = fx.g.outbound.length;
    const p = await ath(["proxy", ...native, "GET", "/notes", "--format", "json"]);
    expect(p.code).toBe(0);
    expect(JSON.parse(p.stdout).status).toBe(200);
    // straight to the app's API (api_base), never through a gateway proxy path
    expect(fx.g.outbound.slice(before).some((line) => line.includes("/ath/proxy/"))).toBe(false);
  });

  test("proxy: the service refusing the token (an ATH error body) exits 4; its API's other errors exit 1", async () => {
    await authorized();
    const missing = await ath(["proxy", ...native, "GET", "/notes/no-such-note"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("ath: HTTP 404\n");
    const saved = Object.values((await fx.credentials()).gateways[GATEWAY].agents)[0] as { client_id: string; client_secret: string; tokens: { demo: { access_token: string } } };
    const revoked = await fx.g.fetch("/ath/revoke", {
      method: "POST",
      body: new URLSearchParams({ token: saved.tokens.demo.access_token, client_id: saved.client_id, client_secret: saved.client_secret }),
    });
    expect(revoked.status).toBe(200);
    const refused = await ath(["proxy", ...native, "GET", "/notes"]);
    expect(refused.code).toBe(4);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toMatch(/401 TOKEN_(REVOKED|INVALID)/);
  });
});
