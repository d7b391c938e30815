/** `ath discover` against the real gateway in process: the catalog as the document (json) or one row per provider (piped text). */
import { describe, expect, test } from "bun:test";
import { GATEWAY, cliOnGateway } from "../../helpers/cli-in-process.ts";

const fx = cliOnGateway();

describe("discover", () => {
  test("json prints the discovery document; piped text is one tab-separated row per provider", async () => {
    const j = await fx.ath(["discover", "-g", GATEWAY, "--format", "json"]);
    const doc = JSON.parse(j.stdout);
    expect(doc).toEqual(await (await fx.g.fetch("/.well-known/ath.json")).json());
    const t = await fx.ath(["discover", "-g", GATEWAY]);
    const demo = doc.supported_providers.find((p: { provider_id: string }) => p.provider_id === "demo");
    expect(t.stdout).toBe(`demo\t${demo.display_name}\t${demo.available_scopes.join(",")}\n`);
  });
});
