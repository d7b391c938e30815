/**
 * The request flow without the CLI: the saved token goes to the proxy, every status is a result, `refusal` is set
 * only when the gateway itself refused (X-ATH-Error), and `onChunk` receives the body as it arrives.
 */
import { describe, expect, test } from "bun:test";
import { request } from "../../../../src/agent/flows/request.ts";
import { BINARY_BODY, GW, cliFixture } from "../../../helpers/cli-harness.ts";

const fx = cliFixture();
const target = { base: GW, native: false };
const call = { target, provider: "github", method: "GET", headers: {} };

describe("request", () => {
  test("sends the saved token and the agent id; an upstream 404 is a result without refusal", async () => {
    await fx.authorized();
    const agent = await fx.agent();
    const ok = await request({ ...call, path: "/v1/items?x=1" }, agent);
    expect(ok).toMatchObject({ provider: "github", method: "GET", url: `${GW}/ath/proxy/github/v1/items?x=1`, status: 200 });
    expect(JSON.parse(new TextDecoder().decode(ok.body))).toMatchObject({ ok: true, query: "?x=1" });
    expect(fx.gw.proxied[0]!.headers.get("x-ath-agent-id")).toBe((await agent.identity()).agentId);
    const missing = await request({ ...call, path: "/missing" }, agent);
    expect(missing.status).toBe(404);
    expect(missing.refusal).toBeUndefined();
  });

  test("a token the gateway refuses comes back with the refusal of its X-ATH-Error", async () => {
    await fx.authorized();
    const token = Object.values((await fx.credentials()).gateways[GW].agents as Record<string, { tokens: { github: { access_token: string } } }>)[0]!.tokens.github.access_token;
    await fx.gw.fetch(`${GW}/ath/revoke`, { method: "POST", body: new URLSearchParams({ token }) });
    const r = await request({ ...call, path: "/v1/items" }, await fx.agent());
    expect(r).toMatchObject({ status: 401, refusal: { code: "TOKEN_INVALID", message: "The access token is invalid" } });
  });

  test("onChunk receives the body's bytes unchanged", async () => {
    await fx.authorized();
    const chunks: Uint8Array[] = [];
    const r = await request({ ...call, path: "/binary", onChunk: (c) => void chunks.push(c.slice()) }, await fx.agent());
    expect(new Uint8Array(Buffer.concat(chunks))).toEqual(BINARY_BODY);
    expect(r.body).toEqual(BINARY_BODY);
  });

  test("a header the request sets itself cannot be passed in; nothing is sent", async () => {
    await fx.authorized();
    for (const name of ["authorization", "X-ATH-Agent-ID"]) {
      await expect(request({ ...call, path: "/v1/items", headers: { [name]: "x" } }, await fx.agent())).rejects.toThrow(TypeError);
    }
    expect(fx.gw.proxied).toEqual([]);
  });

  test("without a saved token it is NO_TOKEN (config) and nothing is sent", async () => {
    await fx.registered();
    await expect(request({ ...call, path: "/v1/items" }, await fx.agent())).rejects.toMatchObject({ kind: "config", code: "NO_TOKEN" });
    expect(fx.gw.proxied).toEqual([]);
  });
});
