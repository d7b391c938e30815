/** The approval policy of Phase A (DESIGN §3, §8): what an agent's registration is granted. */
import { describe, expect, test } from "bun:test";
import { ProviderConfig } from "../../../../src/protocol/index.ts";
import { decideApprovals } from "../../../../src/gateway/rules/policy.ts";

describe("Phase A — approval policy (DESIGN §3, §8)", () => {
  const provider = (over: Record<string, unknown> = {}) =>
    ProviderConfig.parse({
      display_name: "Mail",
      available_scopes: ["mail:read", "mail:send"],
      authorize_endpoint: "https://p.example/authorize",
      token_endpoint: "https://p.example/token",
      client_id: "c",
      client_secret: "s",
      ...over,
    });
  test("requested ∩ available is approved, the rest denied with a reason", () => {
    const r = decideApprovals([{ provider_id: "mail", scopes: ["mail:read", "mail:delete"] }], new Map([["mail", provider()]]), "auto");
    expect(r.status).toBe("approved");
    expect(r.approvals).toEqual([
      { provider_id: "mail", approved_scopes: ["mail:read"], denied_scopes: ["mail:delete"], denial_reason: "Not offered by mail: mail:delete" },
    ]);
  });
  test("an unknown provider is denied entirely; nothing approved → denied", () => {
    const r = decideApprovals([{ provider_id: "nope", scopes: ["x"] }], new Map([["mail", provider()]]), "auto");
    expect(r.status).toBe("denied");
    expect(r.approvals[0]).toEqual({ provider_id: "nope", approved_scopes: [], denied_scopes: ["x"], denial_reason: "Unknown provider 'nope'" });
  });
  test("manual mode (global or per provider) leaves the agent pending; review_scopes are held", () => {
    expect(decideApprovals([{ provider_id: "mail", scopes: ["mail:read"] }], new Map([["mail", provider()]]), "manual").status).toBe("pending");
    expect(decideApprovals([{ provider_id: "mail", scopes: ["mail:read"] }], new Map([["mail", provider({ approval: "manual" })]]), "auto").status).toBe("pending");
    const r = decideApprovals([{ provider_id: "mail", scopes: ["mail:read", "mail:send"] }], new Map([["mail", provider({ review_scopes: ["mail:send"] })]]), "auto");
    expect(r.approvals[0]?.approved_scopes).toEqual(["mail:read"]);
    expect(r.approvals[0]?.denial_reason).toContain("Requires review");
  });
  test("duplicate provider entries are merged", () => {
    const r = decideApprovals(
      [{ provider_id: "mail", scopes: ["mail:read"] }, { provider_id: "mail", scopes: ["mail:send", "mail:read"] }],
      new Map([["mail", provider()]]),
      "auto",
    );
    expect(r.approvals).toHaveLength(1);
    expect(r.approvals[0]?.approved_scopes).toEqual(["mail:read", "mail:send"]);
  });
});
