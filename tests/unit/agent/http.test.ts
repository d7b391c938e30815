/** The agent HTTP client: ofetch-style messages, ATH error bodies → `refused`, schema-checked answers, form encoding. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { exchangeCode } from "../../../src/agent/client.ts";
import { ClientError } from "../../../src/agent/errors.ts";
import { requestJson, type Fetch } from "../../../src/agent/http.ts";

const answer = (status: number, body: string, seen?: Request[]): Fetch => async (input, init) => {
  seen?.push(new Request(input as string, init));
  return new Response(body, { status, headers: { "content-type": "application/json" } });
};

async function failure(p: Promise<unknown>): Promise<ClientError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ClientError) return e;
    throw e;
  }
  throw new Error("expected a ClientError");
}

const url = "http://127.0.0.1:8787/ath/token";

describe("HTTP failures", () => {
  test("an ATH error body becomes a `refused` error naming method, URL, status and code", async () => {
    const e = await failure(requestJson(z.object({}), { method: "post", url }, { fetch: answer(403, '{"code":"SCOPE_NOT_APPROVED","message":"A requested scope is not approved","details":{"unapproved_scopes":["x"]}}') }));
    expect(e.kind).toBe("refused");
    expect(e.code).toBe("SCOPE_NOT_APPROVED");
    expect(e.status).toBe(403);
    expect(e.details).toEqual({ unapproved_scopes: ["x"] });
    expect(e.message).toBe(`[POST] "${url}": 403 SCOPE_NOT_APPROVED — A requested scope is not approved`);
  });

  test("anything else ≥ 400 is a plain failure with the status; an unknown code is not trusted as ATH", async () => {
    for (const body of ["<html>oops</html>", '{"code":"NOPE","message":"x"}', ""]) {
      const e = await failure(requestJson(z.object({}), { method: "GET", url }, { fetch: answer(500, body) }));
      expect(e.kind).toBe("failure");
      expect(e.code).toBe("HTTP_ERROR");
      expect(e.message.startsWith(`[GET] "${url}": 500`)).toBe(true);
    }
  });

  test("a 2xx answer that does not match the schema is INVALID_RESPONSE with the field named", async () => {
    const e = await failure(requestJson(z.object({ access_token: z.string() }), { method: "GET", url }, { fetch: answer(200, '{"access_token":1}') }));
    expect(e.code).toBe("INVALID_RESPONSE");
    expect(e.message).toContain("access_token");
    const notJson = await failure(requestJson(z.object({}), { method: "GET", url }, { fetch: answer(200, "hello") }));
    expect(notJson.code).toBe("INVALID_RESPONSE");
  });

  test("DNS failures are network errors naming the host lookup", async () => {
    const dns: Fetch = async () => {
      throw Object.assign(new TypeError("getaddrinfo ENOTFOUND gw.invalid"), { code: "ENOTFOUND" });
    };
    const e = await failure(requestJson(z.object({}), { method: "GET", url: "http://gw.invalid/x" }, { fetch: dns }));
    expect(e.kind).toBe("network");
    expect(e.message).toBe(`[GET] "http://gw.invalid/x": DNS lookup failed (ENOTFOUND): check the gateway's URL (http://gw.invalid): pass the right -g`);
  });
});

describe("token exchange", () => {
  test("is sent as JSON (every known ATH server parses it: DESIGN §8) and parsed with the TokenResponse schema", async () => {
    const seen: Request[] = [];
    const body = { access_token: "ath_tk_x", token_type: "Bearer", expires_in: 60, effective_scopes: ["a"], provider_id: "p", agent_id: "did:key:z", scope_intersection: { agent_approved: ["a"], user_consented: ["a"], effective: ["a"] } };
    const res = await exchangeCode(
      "http://127.0.0.1:8787",
      { grant_type: "authorization_code", client_id: "ath_c", client_secret: "ath_secret_s", agent_attestation: "j.w.t", code: "c&d=e", ath_session_id: "ath_sess_1" },
      { fetch: answer(200, JSON.stringify(body), seen) },
    );
    expect(res.access_token).toBe("ath_tk_x");
    expect(seen[0]!.headers.get("content-type")).toBe("application/json");
    const sent = JSON.parse(await seen[0]!.text());
    expect(sent.code).toBe("c&d=e");
    expect(sent.grant_type).toBe("authorization_code");
  });
});
