/** The revoke flow without the CLI: the token is revoked with the client credentials, then forgotten. */
import { describe, expect, test } from "bun:test";
import { revoke } from "../../../../src/agent/flows/revoke.ts";
import { GATEWAY as GW, cliOnGateway, githubAndGitlab } from "../../../helpers/cli-in-process.ts";

const fx = cliOnGateway({ scripted: githubAndGitlab, provider: "github", scopes: "repo,read:user" });
const revocations = () => fx.sent.filter((q) => q.path === "/ath/revoke");
const target = { base: GW, native: false };

describe("revoke", () => {
  test("\"all\" revokes every saved token at the gateway and forgets it", async () => {
    await fx.authorized();
    const saved = Object.values((await fx.credentials()).gateways[GW].agents as Record<string, { tokens: { github: { access_token: string } } }>)[0]!;
    const r = await revoke({ target, providers: "all" }, await fx.agent());
    expect(r).toEqual({ gateway: GW, revoked: ["github"] });
    expect(revocations().map((q) => q.body.token)).toEqual([saved.tokens.github.access_token]);
    expect(await fx.active(saved.tokens.github.access_token)).toBe(false); // the gateway no longer takes it
    const after = Object.values((await fx.credentials()).gateways[GW].agents as Record<string, { tokens: object }>)[0]!;
    expect(after.tokens).toEqual({});
  });

  test("a provider without a saved token is NO_TOKEN (config) and nothing is revoked; none named is a usage error", async () => {
    await fx.authorized();
    await expect(revoke({ target, providers: ["gitlab"] }, await fx.agent())).rejects.toMatchObject({ kind: "config", code: "NO_TOKEN" });
    await expect(revoke({ target, providers: [] }, await fx.agent())).rejects.toMatchObject({ kind: "usage" });
    expect(revocations()).toEqual([]);
    const saved = Object.values((await fx.credentials()).gateways[GW].agents as Record<string, { tokens: { github: { access_token: string } } }>)[0]!;
    expect(await fx.active(saved.tokens.github.access_token)).toBe(true); // github's token untouched
  });
});
