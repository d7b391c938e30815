/**
 * DESIGN.md §5 exit codes and output contract of `ath`, checked in process through `main()`: strict flags, global
 * flags before the command words, the last `--format` deciding for output and errors alike, and `--version` /
 * `--help` keeping json mode's one document.
 */
import { describe, expect, test } from "bun:test";
import pkg from "../../package.json" with { type: "json" };
import { runAth } from "../helpers/cli-harness.ts";
import { GATEWAY as GW, cliOnGateway } from "../helpers/cli-in-process.ts";

// A fresh home and the real gateway in process (the fetch of the commands that reach one) per test.
const fx = cliOnGateway();
const home = {
  get dir() {
    return fx.home.dir;
  },
};

/** A loopback port with nothing listening: bind one, then close it. */
function closedPort(): number {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = s.port as number;
  s.stop(true);
  return port;
}

describe("ath --version and --help", () => {
  test("--version prints the package version, the commit and the target (from source: `source` for both)", async () => {
    const r = await runAth(home.dir, ["--version"]);
    expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ code: 0, stdout: `${pkg.version} (commit source, source)\n`, stderr: "" });
  });

  test("every command has --help with examples, exit 0, plain when piped", async () => {
    for (const cmd of [[], ["discover"], ["register"], ["authorize"], ["token"], ["proxy"], ["revoke"], ["status"], ["identity"], ["config"], ["config", "set"]]) {
      const r = await runAth(home.dir, [...cmd, "--help"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("USAGE");
      expect(r.stdout).toContain("EXAMPLES");
      expect(r.stdout).not.toContain("\u001b[");
    }
  });
});

describe("usage errors exit 2", () => {
  const cases: [string, string[]][] = [
    ["no command, only global flags (a bare `ath` shows the usage)", ["-g", GW]],
    ["an unknown command", ["bogus"]],
    ["an unknown config subcommand", ["config", "bogus"]],
    ["an unknown flag", ["status", "--bogus"]],
    ["an unknown short flag", ["status", "-x"]],
    ["a negated non-boolean", ["status", "--no-format"]],
    ["a flag without its value", ["discover", "-g"]],
    ["a bad enum value", ["status", "--mode", "cloud"]],
    ["a bad --format", ["status", "--format", "xml"]],
    ["a missing positional", ["proxy", "github"]],
    ["too many positionals", ["status", "extra"]],
    ["token without --code", ["token", "-g", GW]],
    ["a value on a boolean flag", ["status", "--show-secrets=yes"]],
    ["native mode without --service", ["discover", "--mode", "native"]],
    ["an unknown config key", ["config", "set", "colour", "blue"]],
    ["an agent id that is not a URI", ["config", "set", "agent-id", "not a uri"]],
    ["a gateway URL that is not http(s)", ["config", "set-gateway", "x", "ftp://gw"]],
    ["a bad --timeout", ["authorize", "-g", GW, "--provider", "github", "--timeout", "soon"]],
    ["an unknown flag before the command", ["--bogus", "status"]],
    ["a command flag before the command", ["--provider", "github", "register", "-g", GW]],
    ["a global flag before the command without its value", ["-g"]],
    ["an unknown command after global flags", ["-g", GW, "bogus"]],
  ];
  for (const [what, argv] of cases) {
    test(`${what} → exit 2, one JSON error document in json mode`, async () => {
      const text = await runAth(home.dir, argv);
      expect(text.code).toBe(2);
      expect(text.stdout).toBe("");
      expect(text.stderr).toMatch(/^ath: \S.*\n$/);
      expect(text.stderr).not.toContain("\u001b[");
      // a repeated --format takes the last value, so a bad --format is checked in text mode only
      if (argv.includes("--format")) return;
      const json = await runAth(home.dir, [...argv, "--format", "json"]);
      expect(json.code).toBe(2);
      const doc = JSON.parse(json.stdout);
      expect(Object.keys(doc)).toEqual(["error"]);
      expect(doc.error.code).toBe("USAGE");
      expect(doc.error.message).not.toContain("\u001b[");
    });
  }
});

describe("global flags (DESIGN.md §5) work before the command words as after them", () => {
  test("-g / --gateway=… / --format before the command give the same answer as after it", async () => {
    const after = await fx.ath(["discover", "-g", GW, "--format", "json"]);
    expect(after.code).toBe(0);
    for (const argv of [
      ["-g", GW, "discover", "--format", "json"],
      ["--format", "json", "-g", GW, "discover"],
      [`--gateway=${GW}`, "--format=json", "discover"],
      ["-m", "gateway", "--agent-id", "https://agent.example/a", "-g", GW, "discover", "--format", "json"],
    ]) {
      const before = await fx.ath(argv);
      expect({ argv, ...before }).toEqual({ argv, ...after });
    }
  });

  test("--format json before an unknown command: exit 2 and one JSON error document", async () => {
    const r = await runAth(home.dir, ["--format", "json", "bogus"]);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).error).toMatchObject({ code: "USAGE", message: expect.stringContaining('unknown command "bogus"') });
  });

  test("between command words (`ath config -g x set-gateway …`) and with a flag after the command winning", async () => {
    const r = await runAth(home.dir, ["config", "--format", "json", "set-gateway", "local", GW]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ name: "local", url: GW, default_gateway: "local" });
    const last = await fx.ath(["-g", "nowhere", "discover", "-g", "local"]);
    expect(last.code).toBe(0);
    expect(fx.sent.map((q) => q.path)).toEqual(["/.well-known/ath.json"]);
  });

  test("--help before the command shows that command's help", async () => {
    const r = await runAth(home.dir, ["--help", "discover"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("USAGE ath discover");
  });
});

describe("short flags with =value (`-g=local`)", () => {
  test("-g=<name> resolves the saved gateway named by the value, after and before the command", async () => {
    expect((await runAth(home.dir, ["config", "set-gateway", "local", GW])).code).toBe(0);
    expect((await runAth(home.dir, ["config", "set-gateway", "other", "http://127.0.0.1:9"])).code).toBe(0);
    for (const argv of [["discover", "-g=local"], ["-g=local", "discover"], ["-g=local", "config", "show"]]) {
      const r = await fx.ath([...argv, "--format", "json"]);
      expect({ argv, code: r.code, stderr: r.stderr }).toEqual({ argv, code: 0, stderr: "" });
    }
    expect(fx.sent.map((q) => q.path)).toEqual(["/.well-known/ath.json", "/.well-known/ath.json"]);
  });

  describe("on a native-mode gateway", () => {
    const native = cliOnGateway({ mode: "native" });
    test("-m=native -s=<url> select native mode", async () => {
      const r = await native.ath(["discover", "-m=native", `-s=${GW}`, "--format", "json"]);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout).app_id).toBe("demo");
      expect(native.sent.map((q) => q.path)).toEqual(["/.well-known/ath-app.json"]);
    });
  });

  test("an unknown short flag with a value is still a usage error", async () => {
    const r = await runAth(home.dir, ["status", "-x=1"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown flag -x");
  });
});

describe("not configured exits 3", () => {
  test("no gateway configured names the fix", async () => {
    const r = await runAth(home.dir, ["discover", "--format", "json"]);
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout).error).toEqual({
      code: "NO_GATEWAY",
      message: "no gateway configured: pass -g <url>, or run `ath config set-gateway <name> <url>`",
    });
  });

  test("an unknown gateway name names `ath config set-gateway`", async () => {
    const r = await runAth(home.dir, ["discover", "-g", "staging"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("ath config set-gateway staging <url>");
  });
});

describe("network failures exit 5 and name the URL and cause", () => {
  test("a gateway that is down (connection refused), with the next step", async () => {
    const url = `http://127.0.0.1:${closedPort()}`;
    const r = await runAth(home.dir, ["discover", "-g", url, "--format", "json"]);
    expect(r.code).toBe(5);
    const { error } = JSON.parse(r.stdout);
    expect(error.code).toBe("NETWORK_ERROR");
    expect(error.message).toBe(`[GET] "${url}/.well-known/ath.json": connection refused: is a gateway running at ${url}? Start one with \`ath serve\`, or pass the right -g`);
  });

  test("a gateway that does not answer in time (ATH_HTTP_TIMEOUT_MS)", async () => {
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Promise<Response>(() => {}) });
    try {
      const r = await runAth(home.dir, ["discover", "-g", `http://127.0.0.1:${server.port}`], { env: { ATH_HTTP_TIMEOUT_MS: "50" } });
      expect(r.code).toBe(5);
      expect(r.stderr).toContain("(timeout)");
      expect(r.stderr).toContain(`http://127.0.0.1:${server.port}/.well-known/ath.json`);
    } finally {
      server.stop(true);
    }
  });
});

describe("--format", () => {
  test("the last --format wins for errors as for output", async () => {
    const text = await runAth(home.dir, ["discover", "--format", "json", "--format", "text"]);
    expect(text.code).toBe(3);
    expect(text.stdout).toBe("");
    expect(text.stderr).toStartWith("ath: no gateway configured");
    const json = await runAth(home.dir, ["discover", "--format=text", "--format", "json"]);
    expect(JSON.parse(json.stdout).error.code).toBe("NO_GATEWAY");
    const ok = await runAth(home.dir, ["config", "show", "--format", "json", "--format", "text"]);
    expect(ok.code).toBe(0);
    expect(() => JSON.parse(ok.stdout)).toThrow();
  });

  test("--version --format json prints one document {version, commit, target}; text prints them on one line", async () => {
    for (const argv of [["--version", "--format", "json"], ["--format=json", "-v"]]) {
      const r = await runAth(home.dir, argv);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual({ version: pkg.version, commit: "source", target: "source" });
    }
    const text = await runAth(home.dir, ["--version", "--format", "text"]);
    expect(text.stdout).toMatch(/^\d+\.\d+\.\d+\S* \(commit \S+, \S+\)\n$/);
  });

  test("--help --format json prints one document {command, help} without colour codes", async () => {
    for (const argv of [["proxy", "--help", "--format", "json"], ["--format", "json", "config", "set", "-h"]]) {
      const r = await runAth(home.dir, argv, { tty: true });
      expect(r.code).toBe(0);
      const doc = JSON.parse(r.stdout);
      expect(doc.command).toMatch(/^ath (proxy|config set)$/);
      expect(doc.help).toContain("USAGE");
      expect(doc.help).not.toContain("\u001b[");
    }
  });
});
