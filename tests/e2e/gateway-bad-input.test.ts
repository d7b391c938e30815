/**
 * Bad input at every JSON endpoint of `ath serve`: malformed JSON, wrong types, missing fields, unknown routes, wrong
 * methods and oversized bodies all answer the JSON error shape `{code, message, details?}` with a 4xx — never a
 * 500 and never a stack trace (DESIGN §3 "Errors", §8).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call } from "../helpers/agent.ts";
import { expectError, expectInvalidRequestNaming } from "../helpers/expect-error.ts";
import { rawRequest } from "../helpers/raw-http.ts";
import { startWorld, type World } from "../helpers/world.ts";

let w: World;
beforeAll(async () => {
  w = await startWorld();
});
afterAll(() => w?.stop());

const JSON_ENDPOINTS = ["/ath/agents/register", "/ath/authorize", "/ath/token"];

describe("bad input → JSON error, 4xx", () => {
  test("malformed JSON is 400 INVALID_REQUEST at every JSON endpoint", async () => {
    for (const path of JSON_ENDPOINTS) {
      for (const body of ["{", "{\"a\":", "[1,2", "nul", "\u0000", "{\"agent_id\": \"x\",}"]) {
        const r = await call(`${w.baseUrl}${path}`, { body, headers: { "content-type": "application/json" } });
        expectError(r, "INVALID_REQUEST");
      }
    }
  });

  test("a JSON body that is not an object is 400 INVALID_REQUEST", async () => {
    for (const path of JSON_ENDPOINTS) {
      for (const value of [null, 1, "str", true, [], [{}]]) {
        expectError(await call(`${w.baseUrl}${path}`, { json: value }), "INVALID_REQUEST");
      }
    }
  });

  test("wrong types and missing fields are 400 INVALID_REQUEST naming the field", async () => {
    // (a missing agent_attestation would be 401 INVALID_ATTESTATION: schema codes win, DESIGN §8)
    expectInvalidRequestNaming(await call(`${w.baseUrl}/ath/agents/register`, { json: { agent_attestation: "x" } }), "agent_id");
    expectInvalidRequestNaming(await call(`${w.baseUrl}/ath/authorize`, { json: { client_id: 5, agent_attestation: "x", provider_id: "mail", scopes: ["a"], state: "s".repeat(20) } }), "client_id");
    expectInvalidRequestNaming(await call(`${w.baseUrl}/ath/authorize`, { json: { client_id: "ath_x", agent_attestation: "x", provider_id: "mail", scopes: "a", state: "s".repeat(20) } }), "scopes");
    expectInvalidRequestNaming(await call(`${w.baseUrl}/ath/token`, { form: { grant_type: "authorization_code", agent_attestation: "x" } }), "client_id");
  });

  test("an unsupported content type is a 4xx JSON error", async () => {
    for (const path of JSON_ENDPOINTS.slice(0, 2)) {
      const r = await call(`${w.baseUrl}${path}`, { body: "<xml/>", headers: { "content-type": "application/xml" } });
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expect(typeof r.json.code).toBe("string");
    }
  });

  test("a body over the size limit is 413 PAYLOAD_TOO_LARGE", async () => {
    const big = JSON.stringify({ agent_id: "x".repeat(200 * 1024) });
    expectError(await call(`${w.baseUrl}/ath/agents/register`, { body: big, headers: { "content-type": "application/json" } }), "PAYLOAD_TOO_LARGE");
  });

  test("unknown routes are 404 NOT_FOUND", async () => {
    for (const path of ["/nope", "/ath", "/ath/unknown", "/ath/admin", "/.well-known/other.json", "/ath/agents/register/extra"]) {
      expectError(await call(`${w.baseUrl}${path}`), "NOT_FOUND");
    }
  });

  test("wrong methods are 405 METHOD_NOT_ALLOWED", async () => {
    for (const [method, path] of [
      ["GET", "/ath/agents/register"],
      ["GET", "/ath/authorize"],
      ["GET", "/ath/token"],
      ["PUT", "/ath/token"],
      ["DELETE", "/ath/revoke"],
      ["POST", "/.well-known/ath.json"],
      ["POST", "/health"],
    ] as const) {
      expectError(await call(`${w.baseUrl}${path}`, { method }), "METHOD_NOT_ALLOWED");
    }
  });

  test("an unknown provider in the proxy path with no token is a 4xx JSON error, never a 500", async () => {
    const r = await call(`${w.baseUrl}/ath/proxy/nosuch/v1/x`);
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    expect(typeof r.json.code).toBe("string");
  });

  test("raw request-targets the router cannot place answer JSON 4xx errors", async () => {
    for (const target of ["//127.0.0.1:1/x", "/ath/%zz", "/ath/agents/register%00"]) {
      const r = await rawRequest(w.gw.port, "GET", target);
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expect(r.body).not.toMatch(/\n\s+at |\.ts:\d+/);
    }
  });
});
