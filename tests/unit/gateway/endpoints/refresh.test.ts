/**
 * Refresh tokens at POST /ath/token in process (DESIGN §17), what only the agents' door has: every token response
 * carries an `ath_rt_` refresh token and discovery advertises the grant; malformed refresh requests are named. The
 * family's rules — rotation, race and reuse, narrowing, the cut to what is approved now, every way a family dies,
 * the sweep — are the MCP clients' too, and are tested once for both doors in refresh-families.test.ts.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { DiscoveryDocument, TokenResponse } from "../../../../src/protocol/index.ts";
import { call, fullFlow, type ClientCredentials } from "../../../helpers/agent.ts";
import { attest, craftAttestation, type TestAgent } from "../../../helpers/attestations.ts";
import { expectError, expectInvalidRequestNaming } from "../../../helpers/expect-error.ts";
import { BASE, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";

const IDLE_S = 600;
const TTL_S = 1500;

let g: InProcess;
beforeEach(async () => {
  ({ g } = await scriptedGateway((p) => ({ mail: p.config({ available_scopes: ["mail:read", "mail:send"] }) }), {
    refreshIdleSeconds: IDLE_S,
    refreshTtlSeconds: TTL_S,
  }));
});
afterEach(() => g.close());

interface Family {
  agent: TestAgent;
  client: ClientCredentials;
  token: TokenResponse;
}

async function family(scopes = ["mail:read", "mail:send"]): Promise<Family> {
  const f = await fullFlow(g, { provider_id: "mail", scopes });
  return { agent: f.agent, client: f.client, token: TokenResponse.parse(f.token.json) };
}

async function refresh(f: Pick<Family, "agent" | "client">, refreshToken: string, extra: Record<string, string> = {}) {
  return call(`${BASE}/ath/token`, {
    form: {
      grant_type: "refresh_token",
      ...f.client,
      agent_attestation: await attestNow(f.agent),
      refresh_token: refreshToken,
      ...extra,
    },
    fetch: g.fetch,
  });
}

/** An attestation dated by the gateway's clock (which the tests move). */
function attestNow(agent: TestAgent): Promise<string> {
  const now = Math.floor(g.clock.now() / 1000);
  return craftAttestation(agent, `${BASE}/ath/token`, { claims: { iat: now, exp: now + 120 } });
}

describe("Refresh tokens — issue and rotation", () => {
  test("the code exchange answers a refresh token (ath_rt_) with refresh_expires_in the earlier of --refresh-idle and --refresh-ttl; discovery advertises the grant", async () => {
    const f = await family();
    expect(f.token.refresh_token).toStartWith("ath_rt_");
    expect(f.token.refresh_expires_in).toBe(IDLE_S);
    const d = DiscoveryDocument.parse((await call(`${BASE}/.well-known/ath.json`, { fetch: g.fetch })).json);
    // and DESIGN §23's grants: an enterprise IdP's ID-JAG, delegation to a sub-agent
    expect(d.grant_types_supported).toEqual([
      "authorization_code",
      "refresh_token",
      "urn:ietf:params:oauth:grant-type:jwt-bearer",
      "urn:ietf:params:oauth:grant-type:token-exchange",
    ]);
  });

  test("malformed refresh requests: no refresh_token names it, an unknown one is INVALID_GRANT, an empty scope names scope", async () => {
    const f = await family();
    const form = { grant_type: "refresh_token", ...f.client, agent_attestation: await attest(f.agent, `${BASE}/ath/token`) };
    expectInvalidRequestNaming(await call(`${BASE}/ath/token`, { form, fetch: g.fetch }), "refresh_token");
    expectError(await refresh(f, "ath_rt_not-a-token"), "INVALID_GRANT");
    expectInvalidRequestNaming(await refresh(f, f.token.refresh_token!, { scope: " " }), "scope");
    expectError(await refresh({ ...f, client: { ...f.client, client_secret: "ath_secret_wrong" } }, f.token.refresh_token!), "INVALID_CLIENT");
  });
});
