/**
 * The CLI conventions of gh and friends, through the compiled binary (issue 13, item 12): `ath help <cmd>`, usage on
 * a bare `ath`, "did you mean" for a mistyped command, the global flags described once under INHERITED FLAGS (and
 * not at all for `serve`, which takes none of them), and `ath completion bash|zsh|fish` run in the real shells.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ath, ensureBinary } from "../helpers/cli-binary.ts";
import { tempDir } from "../helpers/net.ts";

let home: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  ensureBinary();
  home = await tempDir("cli-conventions");
});
afterAll(async () => {
  await home?.remove();
});

describe("help and mistakes", () => {
  test("bare `ath` prints the usage with every command and exits 0; `ath help proxy` is `ath proxy --help`", async () => {
    const bare = await ath(home.path, []);
    expect(bare.code).toBe(0);
    for (const c of ["discover", "register", "authorize", "token", "proxy", "revoke", "status", "completion"]) expect(bare.stdout).toContain(c);
    const help = await ath(home.path, ["help", "proxy"]);
    const flag = await ath(home.path, ["proxy", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toBe(flag.stdout);
    expect(help.stdout).toContain("--body");
    expect((await ath(home.path, ["help", "config", "set"])).stdout).toContain("ath config set");
  });

  test("a mistyped command exits 2 with \"did you mean\"; a word far from every command gets the list only", async () => {
    const r = await ath(home.path, ["sttaus"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown command "sttaus" for `ath` (did you mean "status"?)');
    const sub = await ath(home.path, ["config", "shwo"]);
    expect(sub.stderr).toContain('(did you mean "show"?)');
    const far = await ath(home.path, ["xylophone", "--format", "json"]);
    expect(far.code).toBe(2);
    expect(far.json().error.message).not.toContain("did you mean");
    expect(far.json().error.message).toContain("one of discover, register");
  });

  test("the global flags are described once under INHERITED FLAGS, with the exit codes; serve has none", async () => {
    const proxy = (await ath(home.path, ["proxy", "--help"])).stdout;
    const [own, inherited] = proxy.split("INHERITED FLAGS");
    expect(inherited).toContain("--gateway");
    expect(inherited).toContain("EXIT CODES");
    expect(own).not.toContain("--gateway");
    expect(own).toContain("--header");
    const serve = (await ath(home.path, ["serve", "--help"])).stdout;
    expect(serve).not.toContain("INHERITED FLAGS");
    expect(serve).not.toContain("--gateway");
    expect(serve).toContain("--mode"); // its own: what to serve
    expect(serve).toContain("--providers");
  });
});

describe("--help --format json, for programs", () => {
  test("describes the flags, the exit codes and, as JSON Schema, what the command prints — checked against a real answer", async () => {
    const doc = (await ath(home.path, ["proxy", "--help", "--format", "json"])).json();
    expect(doc.command).toBe("ath proxy");
    expect(doc.positionals.map((p: { name: string }) => p.name)).toEqual(["provider", "method", "path"]);
    expect(doc.flags).toContainEqual({ name: "--header", aliases: ["-H"], type: "string", description: expect.any(String), global: false });
    expect(doc.flags).toContainEqual(expect.objectContaining({ name: "--format", type: "enum", options: ["text", "json"], default: "text", global: true }));
    expect(Object.keys(doc.exit_codes)).toEqual(["0", "1", "2", "3", "4", "5"]);
    expect(doc.output_schema.required).toEqual(["status", "headers", "body"]);

    // the schema of `status` validates what `ath status --format json` really prints; the error schema an error
    const Ajv = (await import("ajv/dist/2020.js")).default;
    const ajv = new Ajv({ strict: false });
    const statusDoc = (await ath(home.path, ["status", "--help", "--format", "json"])).json();
    const status = (await ath(home.path, ["status", "--format", "json"])).json();
    expect(ajv.validate(statusDoc.output_schema, status) ? [] : ajv.errors).toEqual([]);
    const failed = await ath(home.path, ["proxy", "nope", "GET", "/x", "-g", "http://127.0.0.1:1", "--format", "json"]);
    expect(failed.code).not.toBe(0);
    expect(ajv.validate(doc.error_schema, failed.json()) ? [] : ajv.errors).toEqual([]);
  });
});

describe("ath completion", () => {
  /** Loads the script in `shell` and asks it to complete `words` (the last one being completed). */
  async function complete(shell: "bash" | "zsh", words: string[]): Promise<string[]> {
    const file = join(home.path, `ath.${shell}`);
    const script = await ath(home.path, ["completion", shell]);
    expect(script.code).toBe(0);
    await writeFile(file, script.stdout);
    const array = words.map((w) => `'${w}'`).join(" ");
    const body =
      shell === "bash"
        ? `source ${file}; COMP_WORDS=(${array}); COMP_CWORD=${words.length - 1}; _ath; printf '%s\\n' "\${COMPREPLY[@]}"`
        : `autoload -U +X compinit && compinit -u; source ${file}; COMP_WORDS=(${array}); COMP_CWORD=${words.length - 1}; _ath; print -l -- $COMPREPLY`;
    const p = Bun.spawnSync([shell, "-c", body], { env: { PATH: process.env.PATH ?? "", HOME: home.path }, stdout: "pipe", stderr: "pipe" });
    expect(p.stderr.toString()).toBe("");
    return p.stdout.toString().split("\n").filter(Boolean);
  }

  test("bash: commands, subcommands, a command's own and global flags, enum values, global flags before the command", async () => {
    expect(await complete("bash", ["ath", "pro"])).toEqual(["proxy"]);
    expect(await complete("bash", ["ath", "config", "s"])).toEqual(["show", "set", "set-gateway"]);
    expect(await complete("bash", ["ath", "proxy", "--bo"])).toEqual(["--body"]);
    expect(await complete("bash", ["ath", "proxy", "--for"])).toEqual(["--format"]);
    expect(await complete("bash", ["ath", "status", "--format", ""])).toEqual(["text", "json"]);
    // a flag's value is not taken for a command word
    expect(await complete("bash", ["ath", "-g", "config", "dis"])).toEqual(["discover"]);
    expect(await complete("bash", ["ath", "completion", ""])).toEqual(["--help", "-h"]);
  });

  test("zsh (through bashcompinit): the same command tree; zsh filters by prefix itself", async () => {
    expect(await complete("zsh", ["ath", "config", "s"])).toEqual(["init", "show", "set", "set-gateway", "use", "unset", "--help", "-h"]);
    expect(await complete("zsh", ["ath", "proxy", "--format", ""])).toEqual(["text", "json"]);
  });

  test("fish: subcommands with descriptions, flags of the current command, enum values", async () => {
    const file = join(home.path, "ath.fish");
    await writeFile(file, (await ath(home.path, ["completion", "fish"])).stdout);
    const fish = (line: string) =>
      Bun.spawnSync(["fish", "--no-config", "-c", `source ${file}; complete -C '${line}'`], { env: { PATH: process.env.PATH ?? "", HOME: home.path }, stdout: "pipe" })
        .stdout.toString()
        .split("\n")
        .filter(Boolean);
    expect(fish("ath pro")).toEqual(["proxy\tCall the provider API with the saved token"]);
    expect(fish("ath config s").map((l) => l.split("\t")[0])).toEqual(["set", "set-gateway", "show"]);
    expect(fish("ath proxy --format ").map((l) => l.split("\t")[0]).sort()).toEqual(["json", "text"]);
    // config's subcommand seen: its flags, not config's subcommands again
    expect(fish("ath config set-gateway --fo").map((l) => l.split("\t")[0])).toEqual(["--format"]);
  });

  test("an unknown shell exits 2 naming the three", async () => {
    const r = await ath(home.path, ["completion", "powershell"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown shell "powershell": one of bash, zsh, fish');
  });
});

