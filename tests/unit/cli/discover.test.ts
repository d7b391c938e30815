/** `ath discover`: the gateway's catalog, as the document (json) or one tab-separated row per provider (piped text). */
import { describe, expect, test } from "bun:test";
import { GW, cliFixture, fakeGateway, runAth } from "../../helpers/cli-harness.ts";

const fx = cliFixture();

describe("discover", () => {
  test("json prints the discovery document; piped text is one tab-separated row per provider", async () => {
    const gw = fakeGateway();
    const j = await runAth(fx.home.dir, ["discover", "-g", GW, "--format", "json"], { fetch: gw.fetch });
    expect(JSON.parse(j.stdout).gateway_id).toBe("fake");
    const t = await runAth(fx.home.dir, ["discover", "-g", GW], { fetch: gw.fetch });
    expect(t.stdout).toBe("github\tGitHub\trepo,read:user\ngitlab\tGitLab\tapi\n");
  });
});
