/**
 * ANY /ath/proxy/{provider_id}/{path} through a real `ath serve` (Bun.serve and Bun's fetch), a real oidc-provider and
 * an API that checks every bearer token by introspection (DESIGN §3 "Proxy", §8): what only the real HTTP stack can
 * show — byte-exact compressed and streamed bodies, and (tests/helpers/proxy-wire.ts, shared with native mode's /api)
 * request-targets `fetch` would normalise, request smuggling and raw targets the router cannot place. The proxy's
 * handler logic (token states, scope_rules, header rules, relaying, refresh) is tested in process:
 * tests/unit/gateway/proxy/handler.test.ts. Every refused request is also checked to have never reached the upstream.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { fullFlow } from "../helpers/agent.ts";
import { rawRequest } from "../helpers/raw-http.ts";
import { proxyWireSuite } from "../helpers/proxy-wire.ts";
import { startWorld, type World } from "../helpers/world.ts";

let w: World;
let canary: ReturnType<typeof Bun.serve>;
const canaryHits: string[] = [];
let mail: Awaited<ReturnType<typeof fullFlow>>;
let calendar: Awaited<ReturnType<typeof fullFlow>>;

beforeAll(async () => {
  canary = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => (canaryHits.push(req.url), new Response("canary")) });
  w = await startWorld();
  mail = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["openid", "mail:read", "mail:send"] });
  calendar = await fullFlow(w.baseUrl, { provider_id: "calendar", scopes: ["calendar:read"] });
});
afterAll(async () => {
  await canary?.stop(true);
  await w?.stop();
});

const proxy = (path: string) => `${w.baseUrl}/ath/proxy/${path}`;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe("Proxy — bodies through the real HTTP stack", () => {
  test("a gzip body passes through byte for byte with its Content-Encoding", async () => {
    const r = await rawRequest(w.gw.port, "GET", "/ath/proxy/mail/v1/gzip", { authorization: `Bearer ${mail.accessToken}`, "accept-encoding": "gzip" });
    expect(r.status).toBe(200);
    expect(r.headers["content-encoding"]).toBe("gzip");
    const json = JSON.parse(new TextDecoder().decode(Bun.gunzipSync(new Uint8Array(r.bytes))));
    expect(json.compressed).toBe(true);
  });

  test("a streamed upstream body arrives complete", async () => {
    const r = await fetch(proxy("mail/v1/stream?chunks=50"), { headers: bearer(mail.accessToken) });
    expect(r.status).toBe(200);
    const text = await r.text();
    expect(text.split("\n").filter(Boolean)).toHaveLength(50);
  });
});

// Raw request-targets, shared with native mode's /api (tests/e2e/native-mode.test.ts).
proxyWireSuite(() => ({
  port: w.gw.port,
  upstreamRequests: () => w.api.requests,
  canaryHits,
  canaryPort: canary.port!,
  plain: { prefix: "/ath/proxy/mail", token: mail.accessToken },
  prefixed: { prefix: "/ath/proxy/calendar", token: calendar.accessToken, apiPrefix: "/v1/" },
}));
