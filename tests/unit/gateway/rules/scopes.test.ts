/** Effective scopes (spec §1.8) and OAuth scope strings, as pure functions. */
import { describe, expect, test } from "bun:test";
import { intersectScopes, parseScopeString, unapprovedScopes } from "../../../../src/gateway/rules/scopes.ts";

describe("spec §1.8 — effective scopes", () => {
  test("effective = approved ∩ consented ∩ requested, in request order, without duplicates", () => {
    expect(intersectScopes(["a", "b", "c"], ["c", "b", "x"], ["c", "a", "b", "c"])).toEqual(["c", "b"]);
    expect(intersectScopes(["a"], ["b"], ["a", "b"])).toEqual([]);
    expect(intersectScopes([], ["a"], ["a"])).toEqual([]);
  });
  test("unapproved scopes are listed once each", () => {
    expect(unapprovedScopes(["a"], ["a", "b", "b", "c"])).toEqual(["b", "c"]);
  });
  test("an OAuth scope string is split on spaces (RFC 6749 §3.3)", () => {
    expect(parseScopeString("openid  mail:read ")).toEqual(["openid", "mail:read"]);
    expect(parseScopeString(undefined)).toEqual([]);
  });
});
