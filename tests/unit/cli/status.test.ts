/** `ath status`: what the home holds, read without network; secrets masked unless `--show-secrets`, TTY or not. */
import { describe, expect, test } from "bun:test";
import { GW, cliFixture } from "../../helpers/cli-harness.ts";

const fx = cliFixture();
const ath = fx.ath;

describe("status", () => {
  for (const tty of [false, true]) {
    test(`status never shows secrets unless --show-secrets (tty=${tty})`, async () => {
      await fx.authorized();
      for (const format of ["text", "json"]) {
        const r = await ath(["status", "--format", format], tty);
        expect(r.code).toBe(0);
        expect(r.stdout).not.toMatch(/s3cr3tvalue|tokenvalue/);
        expect(r.stdout).toContain("ath_secret_s3cr…");
        const shown = await ath(["status", "--format", format, "--show-secrets"], tty);
        expect(shown.stdout).toMatch(/ath_secret_s3cr3tvalue\d/);
        expect(shown.stdout).toMatch(/ath_tk_tokenvalue\d/);
      }
    });
  }

  test("piped status is plain, tab-separated, with ISO times; a TTY gets colour and relative times", async () => {
    await fx.authorized();
    const piped = await ath(["status"]);
    expect(piped.stdout).not.toContain("\u001b[");
    expect(piped.stdout).toMatch(/^token\tgithub\tath_tk_toke…\trepo,read:user\t\d{4}-\d\d-\d\dT[\d:.]+Z\tin \d+m$/m);
    const tty = await ath(["status"], true);
    expect(tty.stdout).toContain("\u001b[");
    expect(tty.stdout).toContain("(in ");
  });
});
