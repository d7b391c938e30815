/** The status flow without the CLI (on a home the real gateway in process filled): what the home holds, secrets masked unless asked, and never a key created. */
import { describe, expect, test } from "bun:test";
import { readdir } from "node:fs/promises";
import { status } from "../../../../src/agent/flows/status.ts";
import { GATEWAY as GW, cliOnGateway, githubAndGitlab } from "../../../helpers/cli-in-process.ts";

const fx = cliOnGateway({ scripted: githubAndGitlab, provider: "github", scopes: "repo,read:user" });

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
    const saved = Object.values((await fx.credentials()).gateways[GW].agents)[0] as { client_secret: string; tokens: { github: { access_token: string } } };
    const secret = saved.client_secret;
    const token = saved.tokens.github.access_token;
    expect(reg).toMatchObject({ gateway: GW, agent_id: masked.identity.agent_id, client_secret: `${secret.slice(0, "ath_secret_".length + 4)}…`, pending: [] });
    expect(reg!.tokens).toEqual([
      { provider_id: "github", access_token: `${token.slice(0, "ath_tk_".length + 4)}…`, effective_scopes: ["repo", "read:user"], expires_at: expect.any(String), seconds_left: expect.any(Number), expired: false, refresh_expires_at: expect.any(String) },
    ]);
    const shown = await status({ target: { mode: "gateway" }, showSecrets: true }, agent);
    expect(shown.registrations[0]!.client_secret).toBe(secret);
    expect(shown.registrations[0]!.tokens[0]!.access_token).toBe(token);
    const other = await status({ target: { mode: "gateway", gateway: "http://127.0.0.1:9" }, showSecrets: false }, agent);
    expect(other.registrations).toEqual([]);
  });
});
