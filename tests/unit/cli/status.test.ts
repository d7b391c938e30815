/** `ath status` against what the real gateway gave: read without network; secrets masked unless `--show-secrets`, TTY or not. */
import { describe, expect, test } from "bun:test";
import { GATEWAY, cliOnGateway } from "../../helpers/cli-in-process.ts";

const fx = cliOnGateway();
const ath = fx.ath;

async function secrets(): Promise<{ secret: string; token: string }> {
  const reg = Object.values((await fx.credentials()).gateways[GATEWAY].agents)[0] as { client_secret: string; tokens: { demo: { access_token: string } } };
  return { secret: reg.client_secret, token: reg.tokens.demo.access_token };
}

describe("status", () => {
  for (const tty of [false, true]) {
    test(`status never shows secrets unless --show-secrets (tty=${tty})`, async () => {
      await fx.authorized();
      const { secret, token } = await secrets();
      for (const format of ["text", "json"]) {
        const r = await ath(["status", "--format", format], tty);
        expect(r.code).toBe(0);
        expect(r.stdout).not.toContain(secret);
        expect(r.stdout).not.toContain(token);
        expect(r.stdout).toContain(`${secret.slice(0, "ath_secret_".length + 4)}…`);
        const shown = await ath(["status", "--format", format, "--show-secrets"], tty);
        expect(shown.stdout).toContain(secret);
        expect(shown.stdout).toContain(token);
      }
    });
  }

  test("piped status is plain, tab-separated, with ISO times; a TTY gets colour and relative times", async () => {
    await fx.authorized();
    const piped = await ath(["status"]);
    expect(piped.stdout).not.toContain("\u001b[");
    expect(piped.stdout).toMatch(/^token\tdemo\tath_tk_.{4}…\tnotes:read\t\d{4}-\d\d-\d\dT[\d:.]+Z\tin \d+m\trefresh until \d{4}-\d\d-\d\dT[\d:.]+Z$/m);
    const tty = await ath(["status"], true);
    expect(tty.stdout).toContain("\u001b[");
    expect(tty.stdout).toContain("(in ");
  });

  test("--refresh reads the live status from the gateway and saves it: an admin's suspension shows", async () => {
    await fx.registered();
    const clientId = (Object.values((await fx.credentials()).gateways[GATEWAY].agents)[0] as { client_id: string }).client_id;
    const before = JSON.parse((await ath(["status", "--format", "json"])).stdout);
    expect(before.registrations[0].agent_status).toBe("approved");
    const patched = await fx.g.fetch(`/ath/admin/agents/${clientId}`, {
      method: "PATCH",
      headers: { authorization: "Bearer admin_in_process_token", "content-type": "application/json" },
      body: JSON.stringify({ status: "suspended" }),
    });
    expect(patched.status).toBe(200);
    const refreshed = JSON.parse((await ath(["status", "--refresh", "--format", "json"])).stdout);
    expect(refreshed.registrations[0]).toMatchObject({ refreshed: true });
    expect((Object.values((await fx.credentials()).gateways[GATEWAY].agents)[0] as { agent_status: string }).agent_status).not.toBe("approved");
  });
});
