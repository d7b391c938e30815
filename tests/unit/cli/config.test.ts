/** `ath config` and `ath identity`: named gateways and the default, settings, the key created once, the identity it gives. */
import { describe, expect, test } from "bun:test";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { homeFixture, runAth } from "../../helpers/cli-harness.ts";

const fx = homeFixture();

describe("config and identity", () => {
  test("set-gateway makes the first gateway the default; use switches; unset removes", async () => {
    expect((await runAth(fx.home.dir, ["config", "set-gateway", "local", "http://127.0.0.1:8787/"])).code).toBe(0);
    expect((await runAth(fx.home.dir, ["config", "set-gateway", "other", "http://127.0.0.1:9999"])).code).toBe(0);
    let cfg = JSON.parse(await readFile(join(fx.home.dir, "config.json"), "utf8"));
    expect(cfg).toEqual({ gateways: { local: "http://127.0.0.1:8787", other: "http://127.0.0.1:9999" }, default_gateway: "local" });
    expect((await runAth(fx.home.dir, ["config", "use", "other"])).code).toBe(0);
    expect((await runAth(fx.home.dir, ["config", "use", "nope"])).code).toBe(2);
    expect((await runAth(fx.home.dir, ["config", "set", "developer-name", "Acme"])).code).toBe(0);
    expect((await runAth(fx.home.dir, ["config", "unset", "gateway", "local"])).code).toBe(0);
    cfg = JSON.parse((await runAth(fx.home.dir, ["config", "show", "--format", "json"])).stdout);
    expect(cfg).toEqual({ gateways: { other: "http://127.0.0.1:9999" }, default_gateway: "other", developer_name: "Acme" });
  });

  test("--key is the global flag on `config set` and `config unset` too (their positional is <setting>)", async () => {
    const key = join(fx.home.dir, "keys", "agent.pem");
    expect((await runAth(fx.home.dir, ["config", "init"])).code).toBe(0);
    const set = await runAth(fx.home.dir, ["config", "set", "developer-name", "Acme", "--key", key, "--format", "json"]);
    expect({ code: set.code, stderr: set.stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(set.stdout)).toEqual({ developer_name: "Acme" });
    const unset = await runAth(fx.home.dir, ["config", "unset", "developer-name", "--key", key, "--format", "json"]);
    expect({ code: unset.code, stderr: unset.stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(unset.stdout)).toEqual({ removed: "developer-name" });
    expect((await runAth(fx.home.dir, ["config", "set", "--help"])).stdout).toContain("<SETTING> <VALUE>");
  });

  test("the key is created once and reused; with no agent_id the identity is its did:key", async () => {
    const first = JSON.parse((await runAth(fx.home.dir, ["config", "init", "--format", "json"])).stdout);
    expect(first.key_created).toBe(true);
    expect(first.agent_id).toMatch(/^did:key:z/);
    const again = JSON.parse((await runAth(fx.home.dir, ["config", "init", "--format", "json"])).stdout);
    expect(again.key_created).toBe(false);
    expect(again.agent_id).toBe(first.agent_id);
    const doc = JSON.parse((await runAth(fx.home.dir, ["identity", "--format", "json"])).stdout);
    expect(doc.agent_id).toBe(first.agent_id);
    expect(doc.public_key).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", kid: first.thumbprint });
    expect(doc.public_key.d).toBeUndefined();
  });

  test("--agent-id overrides the identity; --key loads a SEC1 PEM", async () => {
    const proc = Bun.spawnSync(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout"]);
    const pemPath = join(fx.home.dir, "sec1.pem");
    await Bun.write(pemPath, proc.stdout);
    const r = await runAth(fx.home.dir, ["identity", "--key", pemPath, "--agent-id", "https://agent.example/id", "--format", "json"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).agent_id).toBe("https://agent.example/id");
    const bad = await runAth(fx.home.dir, ["identity", "--key", join(fx.home.dir, "missing.pem")]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("missing.pem");
  });
});
