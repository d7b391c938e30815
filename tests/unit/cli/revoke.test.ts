/** `ath revoke` in process against a fake gateway: the token is revoked with the client credentials and forgotten. */
import { describe, expect, test } from "bun:test";
import { GW, cliFixture } from "../../helpers/cli-harness.ts";

const fx = cliFixture();
const ath = fx.ath;

describe("revoke", () => {
  test("revoke calls /ath/revoke with the client credentials and forgets the token; proxy then exits 3", async () => {
    await fx.authorized();
    const r = await ath(["revoke", "-g", GW, "--provider", "github"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(""); // a successful change prints nothing when piped
    const call = fx.gw.requests.find((q) => q.path === "/ath/revoke")!;
    expect(call.contentType).toBe("application/json");
    expect(String(call.body.token)).toMatch(/^ath_tk_/);
    expect(String(call.body.client_secret)).toMatch(/^ath_secret_/);
    const p = await ath(["proxy", "-g", GW, "github", "GET", "/v1/items", "--format", "json"]);
    expect(p.code).toBe(3);
    expect(JSON.parse(p.stdout).error.code).toBe("NO_TOKEN");
    expect(fx.gw.proxied).toHaveLength(0);
  });
});
