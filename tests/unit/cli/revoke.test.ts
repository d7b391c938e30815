/** `ath revoke` in process against the real gateway: the token is revoked there with the client credentials and forgotten. */
import { describe, expect, test } from "bun:test";
import { GATEWAY, cliOnGateway } from "../../helpers/cli-in-process.ts";

const fx = cliOnGateway();
const ath = fx.ath;

describe("revoke", () => {
  test("revoke revokes the token at the gateway and forgets it; proxy then exits 3; the gateway refuses the old token", async () => {
    await fx.authorized();
    const token = (Object.values((await fx.credentials()).gateways[GATEWAY].agents)[0] as { tokens: { demo: { access_token: string } } }).tokens.demo.access_token;
    expect((await ath(["proxy", "-g", GATEWAY, "demo", "GET", "/notes"])).code).toBe(0);
    const r = await ath(["revoke", "-g", GATEWAY, "--provider", "demo"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(""); // a successful change prints nothing when piped
    expect(await fx.g.audited("token.revoked")).toBe(1);
    const p = await ath(["proxy", "-g", GATEWAY, "demo", "GET", "/notes", "--format", "json"]);
    expect(p.code).toBe(3);
    expect(JSON.parse(p.stdout).error.code).toBe("NO_TOKEN");
    const old = await fx.g.fetch("/ath/proxy/demo/notes", { headers: { authorization: `Bearer ${token}` } });
    expect(old.status).toBe(401);
    expect(old.headers.get("x-ath-error")).toBe("TOKEN_REVOKED");
  });
});
