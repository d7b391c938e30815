/** The revoke flow without the CLI: the token is revoked with the client credentials, then forgotten. */
import { describe, expect, test } from "bun:test";
import { revoke } from "../../../../src/agent/flows/revoke.ts";
import { GW, cliFixture } from "../../../helpers/cli-harness.ts";

const fx = cliFixture();
const target = { base: GW, native: false };

describe("revoke", () => {
  test("\"all\" revokes every saved token at the gateway and forgets it", async () => {
    await fx.authorized();
    const saved = Object.values((await fx.credentials()).gateways[GW].agents as Record<string, { tokens: { github: { access_token: string } } }>)[0]!;
    const r = await revoke({ target, providers: "all" }, await fx.agent());
    expect(r).toEqual({ gateway: GW, revoked: ["github"] });
    expect(fx.gw.revoked).toEqual([saved.tokens.github.access_token]);
    const after = Object.values((await fx.credentials()).gateways[GW].agents as Record<string, { tokens: object }>)[0]!;
    expect(after.tokens).toEqual({});
  });

  test("a provider without a saved token is NO_TOKEN (config) and nothing is revoked; none named is a usage error", async () => {
    await fx.registered();
    await expect(revoke({ target, providers: ["gitlab"] }, await fx.agent())).rejects.toMatchObject({ kind: "config", code: "NO_TOKEN" });
    await expect(revoke({ target, providers: [] }, await fx.agent())).rejects.toMatchObject({ kind: "usage" });
    expect(fx.gw.revoked).toEqual([]);
  });
});
