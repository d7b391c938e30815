/** The sandbox's notes API (RFC 6750): scopes decide reads and writes, each user sees their own notes. */
import { afterEach, describe, expect, setSystemTime, test } from "bun:test";
import { createDemo } from "../../../../src/gateway/demo/index.ts";
import { createPkce } from "../../../../src/gateway/oauth/pkce.ts";
import { BASE, CALLBACK, api, authorizeUrl, signIn, tokenRequest, tokens } from "../../../helpers/demo.ts";

afterEach(() => setSystemTime());

describe("notes API (RFC 6750)", () => {
  test("notes:read lists and reads; notes:write creates and deletes", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const t = await tokens(demo);
    const list = (await (await api(demo, "GET", "/notes", t.access_token)).json()) as { user: string; notes: { text: string }[] };
    expect(list.user).toBe("ada-lovelace");
    expect(list.notes[0]!.text).toContain("Welcome to Demo Notes, Ada Lovelace");
    const created = await api(demo, "POST", "/notes", t.access_token, { text: "buy milk" });
    expect(created.status).toBe(201);
    const note = (await created.json()) as { id: string; text: string };
    expect(note.text).toBe("buy milk");
    expect(await (await api(demo, "GET", `/notes/${note.id}`, t.access_token)).json()).toMatchObject({ id: note.id, text: "buy milk" });
    expect((await api(demo, "DELETE", `/notes/${note.id}`, t.access_token)).status).toBe(204);
    expect((await api(demo, "GET", `/notes/${note.id}`, t.access_token)).status).toBe(404);
  });

  test("a read-only token gets 403 insufficient_scope on writes, and nothing is written", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const t = await tokens(demo, "notes:read");
    const res = await api(demo, "POST", "/notes", t.access_token, { text: "sneaky" });
    expect(res.status).toBe(403);
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="demo", error="insufficient_scope", scope="notes:write"');
    const list = (await (await api(demo, "GET", "/notes", t.access_token)).json()) as { notes: { text: string }[] };
    expect(list.notes.map((n) => n.text)).not.toContain("sneaky");
  });

  test("a write-only token cannot read", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const t = await tokens(demo, "notes:write");
    expect((await api(demo, "GET", "/notes", t.access_token)).status).toBe(403);
  });

  test("missing, unknown and expired tokens get 401 with a Bearer challenge", async () => {
    const demo = createDemo({ baseUrl: BASE, accessTokenTtlSeconds: 60 });
    const none = await api(demo, "GET", "/notes");
    expect([none.status, none.headers.get("www-authenticate")]).toEqual([401, 'Bearer realm="demo"']);
    const bad = await api(demo, "GET", "/notes", "demo_at_nope");
    expect(bad.status).toBe(401);
    expect(bad.headers.get("www-authenticate")).toContain('error="invalid_token"');
    const t0 = Date.now();
    const t = await tokens(demo);
    setSystemTime(new Date(t0 + 61_000));
    expect((await api(demo, "GET", "/notes", t.access_token)).status).toBe(401);
  });

  test("each demo user sees only their own notes", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const ada = await tokens(demo);
    await api(demo, "POST", "/notes", ada.access_token, { text: "ada's secret" });
    const pkce = createPkce();
    const res = await signIn(demo, authorizeUrl(demo, {}, pkce.challenge), "allow", "Grace Hopper");
    const code = new URL(res.headers.get("location")!).searchParams.get("code")!;
    const grace = (await (await tokenRequest(demo, { grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: pkce.verifier })).json()) as { access_token: string };
    const list = (await (await api(demo, "GET", "/notes", grace.access_token)).json()) as { user: string; notes: { text: string }[] };
    expect(list.user).toBe("grace-hopper");
    expect(list.notes.map((n) => n.text)).not.toContain("ada's secret");
  });

  test("bad note bodies are 400 invalid_request", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const t = await tokens(demo);
    for (const body of [{}, { text: "" }, { text: 5 }, { text: "x".repeat(2001) }, null]) {
      const res = await api(demo, "POST", "/notes", t.access_token, body);
      expect([res.status, ((await res.json()) as { error: string }).error]).toEqual([400, "invalid_request"]);
    }
  });
});
