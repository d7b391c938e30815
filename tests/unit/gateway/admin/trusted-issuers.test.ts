/**
 * Trusted issuers (DESIGN §23) where an operator writes them: the providers file's `trusted_issuers` (validated with
 * the providers, every problem named by its path) and the admin API — `GET|POST /ath/admin/trusted-issuers`, `DELETE
 * …/{issuer}` URL-encoded; the admin token required; a bad entry is 400 naming its field and changes nothing. The
 * JWKS cache's lifetime rule and the `subjects` patterns, pure.
 */
import { afterAll, afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jwksLifetime } from "../../../../src/gateway/identity/jwks.ts";
import { ConfigError, loadGatewayFile } from "../../../../src/gateway/providers/file.ts";
import { subjectMatches } from "../../../../src/protocol/identity.ts";
import { call } from "../../../helpers/agent.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { ADMIN_TOKEN, BASE, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";

const admin = { "x-ath-user-token": ADMIN_TOKEN };
const IDP = { issuer: "https://corp.okta.example", jwks_uri: "https://corp.okta.example/keys", kind: "idp" };

describe("the providers file's trusted_issuers", () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const file = (content: unknown) => {
    const dir = mkdtempSync(join(tmpdir(), "issuers-"));
    dirs.push(dir);
    const path = join(dir, "providers.json");
    writeFileSync(path, JSON.stringify(content));
    return path;
  };

  test("read beside the providers; a file without them has none", () => {
    const { providers, trustedIssuers } = loadGatewayFile(file({ trusted_issuers: [IDP] }));
    expect({ providers, trustedIssuers }).toEqual({ providers: {}, trustedIssuers: [IDP as never] });
    expect(loadGatewayFile(file({})).trustedIssuers).toEqual([]);
  });

  test("every problem is reported at once, with its path", () => {
    const bad = [
      { ...IDP, kind: "saml" },
      { issuer: "https://spire.example", jwks_uri: "https://spire.example/keys", kind: "workload" },
      { issuer: "https://both.example", jwks_uri: "https://both.example/keys", jwks: { keys: [{ kty: "EC" }] }, kind: "idp" },
      { issuer: "https://priv.example", jwks: { keys: [{ kty: "EC", d: "secret" }] }, kind: "idp" },
      IDP,
      IDP,
    ];
    let message = "";
    try {
      loadGatewayFile(file({ trusted_issuers: bad }));
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      message = (e as Error).message;
    }
    for (const expected of ["trusted_issuers.0.kind", "trusted_issuers.1.subjects", "trusted_issuers.2.jwks_uri", "trusted_issuers.3.jwks.keys.0", "trusted_issuers.5.issuer: https://corp.okta.example is listed twice"]) {
      expect(message).toContain(expected);
    }
  });
});

describe("admin API — /ath/admin/trusted-issuers", () => {
  let g: InProcess;
  beforeEach(async () => {
    ({ g } = await scriptedGateway((p) => ({ mail: p.config() })));
  });
  afterEach(() => g.close());
  const url = (issuer = "") => `${BASE}/ath/admin/trusted-issuers${issuer ? `/${encodeURIComponent(issuer)}` : ""}`;

  test("POST adds (201) or replaces (200), GET lists with the source, DELETE of the URL-encoded issuer removes once (then 404)", async () => {
    expect((await call(url(), { json: IDP, headers: admin, fetch: g.fetch })).status).toBe(201);
    const replaced = await call(url(), { json: { ...IDP, audience: "https://gw.example", source: "admin" }, headers: admin, fetch: g.fetch });
    expect({ status: replaced.status, json: replaced.json }).toEqual({ status: 200, json: { ...IDP, audience: "https://gw.example", source: "admin" } });
    expect((await call(url(), { headers: admin, fetch: g.fetch })).json).toEqual({ trusted_issuers: [{ ...IDP, audience: "https://gw.example", source: "admin" }] });
    expect((await call(url(IDP.issuer), { method: "DELETE", headers: admin, fetch: g.fetch })).json).toEqual({ issuer: IDP.issuer, deleted: true });
    expectError(await call(url(IDP.issuer), { method: "DELETE", headers: admin, fetch: g.fetch }), "NOT_FOUND");
  });

  test("without the admin token 401, a bad entry 400 naming its field — and nothing changes", async () => {
    expectError(await call(url(), { json: IDP, fetch: g.fetch }), "UNAUTHORIZED");
    expectError(await call(url(), { fetch: g.fetch }), "UNAUTHORIZED");
    const r = await call(url(), { json: { issuer: "https://spire.example", jwks_uri: "https://spire.example/keys", kind: "workload" }, headers: admin, fetch: g.fetch });
    expect(expectError(r, "INVALID_REQUEST").message).toContain("subjects");
    expectError(await call(url(), { json: { ...IDP, unknown: 1 }, headers: admin, fetch: g.fetch }), "INVALID_REQUEST");
    expect((await call(url(), { headers: admin, fetch: g.fetch })).json).toEqual({ trusted_issuers: [] });
  });
});

describe("pure rules", () => {
  test("a JWKS is kept as its max-age says, between 1 minute and 1 hour; 1 hour when it does not say; 1 minute for no-store", () => {
    expect([null, "max-age=120", "max-age=5", "max-age=86400", "no-store", "public, no-cache", "private"].map(jwksLifetime)).toEqual([3_600_000, 120_000, 60_000, 3_600_000, 60_000, 60_000, 3_600_000]);
  });

  test("a subjects pattern: * is one path segment's worth, ** crosses segments, the rest is literal", () => {
    const cases: [string, string, boolean][] = [
      ["spiffe://corp/agents/*", "spiffe://corp/agents/a", true],
      ["spiffe://corp/agents/*", "spiffe://corp/agents/a/b", false],
      ["spiffe://corp/agents/*", "spiffe://corp/agentsX", false],
      ["spiffe://corp/**", "spiffe://corp/agents/a/b", true],
      ["repo:org/*:ref:refs/heads/main", "repo:org/app:ref:refs/heads/main", true],
      ["spiffe://corp.example/x", "spiffe://corpXexample/x", false],
    ];
    for (const [pattern, sub, matches] of cases) expect({ pattern, sub, matches: subjectMatches(pattern, sub) }).toEqual({ pattern, sub, matches });
  });
});
