/**
 * The request flow without the CLI, against the real gateway in process: the saved token goes to the proxy, every status is a result, `refusal` is set
 * only when the gateway itself refused (X-ATH-Error), and `onChunk` receives the body as it arrives.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import { request } from "../../../../src/agent/flows/request.ts";
import { GATEWAY as GW, cliOnGateway, githubAndGitlab } from "../../../helpers/cli-in-process.ts";

// the real gateway in process; github on a scripted provider whose API answers /missing and /binary
const fx = cliOnGateway({ scripted: githubAndGitlab, provider: "github", scopes: "repo,read:user" });
/** Bytes that are not UTF-8 (a lone 0xff, a NUL, a cut sequence). */
const BINARY_BODY = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0xfe, 0xe2, 0x82]);
beforeEach(() => {
  fx.p.routes.set("/missing", () => Response.json({ message: "Not Found" }, { status: 404 }));
  fx.p.routes.set("/binary", () => new Response(BINARY_BODY, { headers: { "content-type": "application/octet-stream" } }));
});
const proxied = () => fx.sent.filter((r) => r.path.startsWith("/ath/proxy/"));
const target = { base: GW, native: false };
const call = { target, provider: "github", method: "GET", headers: {} };

describe("request", () => {
  test("sends the saved token and the agent id; an upstream 404 is a result without refusal", async () => {
    await fx.authorized();
    const agent = await fx.agent();
    const ok = await request({ ...call, path: "/v1/items?x=1" }, agent);
    expect(ok).toMatchObject({ provider: "github", method: "GET", url: `${GW}/ath/proxy/github/v1/items?x=1`, status: 200 });
    expect(JSON.parse(new TextDecoder().decode(ok.body))).toMatchObject({ method: "GET", path: "/v1/items", query: "?x=1" });
    expect(proxied()[0]!.headers.get("x-ath-agent-id")).toBe((await agent.identity()).agentId);
    const missing = await request({ ...call, path: "/missing" }, agent);
    expect(missing.status).toBe(404);
    expect(missing.refusal).toBeUndefined();
  });

  test("a token the gateway refuses comes back with the refusal of its X-ATH-Error", async () => {
    await fx.authorized();
    const saved = Object.values((await fx.credentials()).gateways[GW].agents as Record<string, { client_id: string; client_secret: string; tokens: { github: { access_token: string } } }>)[0]!;
    const revoked = await fx.g.fetch("/ath/revoke", { method: "POST", body: new URLSearchParams({ client_id: saved.client_id, client_secret: saved.client_secret, token: saved.tokens.github.access_token }) });
    expect(revoked.status).toBe(200);
    const r = await request({ ...call, path: "/v1/items" }, await fx.agent());
    expect(r).toMatchObject({ status: 401, refusal: { code: "TOKEN_REVOKED", message: expect.any(String) } });
    expect(fx.p.to("/v1/items")).toEqual([]); // refused at the gateway, never sent upstream
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
    expect(proxied()).toEqual([]);
  });

  test("without a saved token it is NO_TOKEN (config) and nothing is sent", async () => {
    await fx.registered();
    await expect(request({ ...call, path: "/v1/items" }, await fx.agent())).rejects.toMatchObject({ kind: "config", code: "NO_TOKEN" });
    expect(proxied()).toEqual([]);
  });
});
