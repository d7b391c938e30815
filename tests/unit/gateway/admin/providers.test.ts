/**
 * The admin provider API in process (DESIGN §9): /ath/admin/providers needs X-ATH-User-Token, lists and reads
 * providers with the client secret masked, adds (POST), replaces (PUT) and removes (DELETE) them — and reads only
 * the fields of the provider schema from a request.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { openProvider, requireProvider } from "../../../../src/gateway/domain/providers.ts";
import { call } from "../../../helpers/agent.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { ADMIN_TOKEN, BASE, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import type { ScriptedProvider } from "../../../helpers/scripted-provider.ts";

let g: InProcess;
let p: ScriptedProvider;
beforeEach(async () => {
  ({ g, p } = await scriptedGateway((p) => ({ mail: p.config(), other: p.config({ client_secret: "other-secret" }) })));
});
afterEach(() => g.close());

const admin = { "x-ath-user-token": ADMIN_TOKEN };
const url = (id = "") => `${BASE}/ath/admin/providers${id ? `/${id}` : ""}`;
const send = (u: string, init: Parameters<typeof call>[1] = {}) => call(u, { ...init, fetch: g.fetch });
const listed = async () => ((await send(`${BASE}/.well-known/ath.json`)).json.supported_providers as { provider_id: string; display_name: string }[]);

describe("admin API — /ath/admin/providers", () => {
  test("every admin route without or with a wrong X-ATH-User-Token is 401 UNAUTHORIZED, and changes nothing", async () => {
    const variants: Record<string, string>[] = [{}, { "x-ath-user-token": "wrong" }, { "x-ath-user-token": `${ADMIN_TOKEN}x` }, { authorization: "Bearer wrong" }];
    for (const [i, headers] of variants.entries()) {
      // a gateway of its own per variant: ten wrong tokens from one client are rate-limited (DESIGN §14), tested apart
      if (i > 0) {
        g.close();
        ({ g, p } = await scriptedGateway((p) => ({ mail: p.config(), other: p.config({ client_secret: "other-secret" }) })));
      }
      expectError(await send(url(), { headers }), "UNAUTHORIZED");
      expectError(await send(url("mail"), { headers }), "UNAUTHORIZED");
      expectError(await send(url(), { headers, json: { provider_id: "evil", display_name: "x" } }), "UNAUTHORIZED");
      expectError(await send(url("mail"), { method: "DELETE", headers }), "UNAUTHORIZED");
      expect((await listed()).map((x) => x.provider_id).sort()).toEqual(["demo", "mail", "other"]);
      expect(await g.audited("provider.created")).toBe(0);
      expect(await g.audited("provider.deleted")).toBe(0);
    }
  });

  test("list and get mask client_secret", async () => {
    const list = await send(url(), { headers: admin });
    expect(list.status).toBe(200);
    expect((list.json.providers as { provider_id: string }[]).map((x) => x.provider_id).sort()).toEqual(["demo", "mail", "other"]);
    const one = await send(url("mail"), { headers: admin });
    expect(one.status).toBe(200);
    expect(one.json).toMatchObject({ provider_id: "mail", client_secret: "********", source: "file" });
    for (const r of [list, one]) {
      expect(r.text).not.toContain(p.clientSecret);
      expect(r.text).not.toContain("other-secret");
    }
  });

  test("POST adds a provider (api_base_url optional) that discovery lists; PUT updates it; DELETE removes it", async () => {
    const entry = { available_scopes: ["mail:read"], authorize_endpoint: `${p.origin}/authorize`, token_endpoint: `${p.origin}/token`, client_id: p.clientId, client_secret: p.clientSecret };
    const created = await send(url(), { headers: admin, json: { provider_id: "added", display_name: "Added at runtime", ...entry } });
    expect(created.status).toBe(201);
    expect(created.text).not.toContain(p.clientSecret);
    expect((await listed()).find((x) => x.provider_id === "added")?.display_name).toBe("Added at runtime");

    const updated = await send(url("added"), { method: "PUT", headers: admin, json: { display_name: "Renamed", ...entry } });
    expect(updated.status).toBe(200);
    expect((await listed()).find((x) => x.provider_id === "added")?.display_name).toBe("Renamed");

    const deleted = await send(url("added"), { method: "DELETE", headers: admin });
    expect({ status: deleted.status, body: deleted.json }).toEqual({ status: 200, body: { provider_id: "added", deleted: true } });
    expect((await listed()).some((x) => x.provider_id === "added")).toBe(false);
    expectError(await send(url("added"), { headers: admin }), "NOT_FOUND", { provider_id: "added" });
  });

  test("an invalid provider body is 400 INVALID_REQUEST naming the field, and nothing is added", async () => {
    const r = await send(url(), {
      headers: admin,
      json: { provider_id: "bad", display_name: "Bad", available_scopes: ["x"], authorize_endpoint: "not a url", token_endpoint: `${p.origin}/token`, client_id: "c", client_secret: "s" },
    });
    const e = expectError(r, "INVALID_REQUEST");
    expect(`${e.message} ${JSON.stringify(e.details ?? {})}`).toContain("authorize_endpoint");
    expect(await g.gw.store.getProvider("bad")).toBeNull();
  });

  test("POST refuses fields outside the provider schema (a misspelt scope_rule, a sealed secret, __proto__), naming each, and adds nothing", async () => {
    const body = `{"provider_id":"massassign","display_name":"M","available_scopes":["a"],"authorize_endpoint":"http://127.0.0.1:1/a","token_endpoint":"http://127.0.0.1:1/t","client_id":"c","client_secret":"s","scope_rule":{"a":["GET /x"]},"client_secret_sealed":"v1.x.y","__proto__":{"consent_screen":false}}`;
    const r = await send(url(), { body, headers: { "content-type": "application/json", ...admin } });
    const e = expectError(r, "INVALID_REQUEST");
    expect(e.message).toContain('unknown field "scope_rule" (did you mean "scope_rules"?)');
    expect(e.message).toContain('unknown field "client_secret_sealed"');
    expect(e.message).toContain('unknown field "__proto__"');
    expect(await g.gw.store.getProvider("massassign")).toBeNull();
  });

  test("a GET answer sent back with PUT round-trips: source is ignored, the masked secret keeps the stored one", async () => {
    const created = await send(url(), {
      headers: admin,
      json: { provider_id: "roundtrip", display_name: "R", available_scopes: ["a"], authorize_endpoint: "http://127.0.0.1:1/a", token_endpoint: "http://127.0.0.1:1/t", client_id: "c", client_secret: "kept-secret" },
    });
    expect(created.status).toBe(201);
    const got = await send(url("roundtrip"), { headers: admin });
    const put = await send(url("roundtrip"), { method: "PUT", headers: admin, json: { ...got.json, display_name: "Renamed" } });
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ display_name: "Renamed", source: "admin", client_secret: "********" });
    expect((await openProvider(g.gw, await requireProvider(g.gw, "roundtrip"))).config.client_secret).toBe("kept-secret");
  });

  test("a scope rule over 512 characters or with more than 8 `**` is refused at configuration (400 INVALID_REQUEST), and nothing is added", async () => {
    const entry = (rule: string) => ({ provider_id: "globby", ...p.config(), scope_rules: { "mail:read": [rule] } });
    const nine = `GET /${Array.from({ length: 9 }, () => "**").join("/a/")}`;
    const long = `GET /${"x".repeat(520)}`;
    for (const rule of [nine, long]) {
      const r = await send(url(), { headers: admin, json: entry(rule) });
      expect({ status: r.status, code: r.json.code }).toEqual({ status: 400, code: "INVALID_REQUEST" });
    }
    const eight = `GET /${Array.from({ length: 8 }, () => "**").join("/a/")}`;
    expect((await send(url(), { headers: admin, json: entry(eight) })).status).toBe(201);
  });
});
