/** The status flow without the CLI: what the home holds, secrets masked unless asked, and never a key created. */
import { describe, expect, test } from "bun:test";
import { readdir } from "node:fs/promises";
import { status } from "../../../../src/agent/flows/status.ts";
import { GW, cliFixture } from "../../../helpers/cli-harness.ts";

const fx = cliFixture();

describe("status", () => {
  test("an empty home: no identity yet, and status does not create the key", async () => {
    const s = await status({ target: { mode: "gateway" }, showSecrets: false }, await fx.agent());
    expect(s).toEqual({
      home: fx.home.dir,
      default_gateway: null,
      gateways: {},
      identity: { agent_id: null, key_path: `${fx.home.dir}/keys/agent.pem`, key_exists: false },
      registrations: [],
    });
    expect(await readdir(fx.home.dir)).toEqual([]);
  });

  test("registrations and tokens, secrets masked unless showSecrets; a named gateway narrows the list", async () => {
    await fx.authorized();
    const agent = await fx.agent();
    const masked = await status({ target: { mode: "gateway" }, showSecrets: false }, agent);
    const [reg] = masked.registrations;
    expect(reg).toMatchObject({ gateway: GW, agent_id: masked.identity.agent_id, client_secret: "ath_secret_s3cr…", pending: [] });
    expect(reg!.tokens).toEqual([{ provider_id: "github", access_token: "ath_tk_toke…", effective_scopes: ["repo", "read:user"], expires_at: expect.any(String), seconds_left: expect.any(Number), expired: false, refresh_expires_at: null }]);
    const shown = await status({ target: { mode: "gateway" }, showSecrets: true }, agent);
    expect(shown.registrations[0]!.client_secret).toMatch(/^ath_secret_s3cr3tvalue\d$/);
    expect(shown.registrations[0]!.tokens[0]!.access_token).toMatch(/^ath_tk_tokenvalue\d$/);
    const other = await status({ target: { mode: "gateway", gateway: "http://127.0.0.1:9" }, showSecrets: false }, agent);
    expect(other.registrations).toEqual([]);
  });
});
