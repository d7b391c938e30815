/** `ath templates [id] [--format json]`: the built-in provider templates, offline. */
import { describe, expect, test } from "bun:test";
import { ProviderConfig } from "../../../src/protocol/index.ts";
import { TEMPLATES } from "../../../src/gateway/providers/templates/index.ts";
import { loadProvidersFile } from "../../../src/gateway/providers/file.ts";
import { stripAnsi } from "../../../src/cli/kit/render.ts";
import { cliOnGateway } from "../../helpers/cli-in-process.ts";
import { tempDir } from "../../helpers/net.ts";

// the real gateway in process is the fetch: `templates` is offline, and a request would show in `sent`
const cli = cliOnGateway();

describe("ath templates", () => {
  test("piped, the list is one tab-separated line per template: id, name, quirks; no request is made", async () => {
    const r = await cli.ath(["templates"]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines.map((l) => l.split("\t")[0])).toEqual(Object.keys(TEMPLATES));
    expect(lines.find((l) => l.startsWith("slack\t"))).toBe(`slack\tSlack\t${TEMPLATES.slack!.quirks.join("; ")}`);
    expect(r.stderr).toBe("");
    expect(cli.sent).toEqual([]);
  });

  test("on a terminal the list has a header row", async () => {
    const r = await cli.ath(["templates"], true);
    expect(stripAnsi(r.stdout).split("\n")[0]).toMatch(/^TEMPLATE\s+NAME\s+QUIRKS$/);
  });

  test("--format json lists id, display name, quirks and docs", async () => {
    const r = await cli.ath(["templates", "--format", "json"]);
    const doc = JSON.parse(r.stdout) as { templates: { id: string; display_name: string; quirks: string[]; docs: string[] }[] };
    expect(doc.templates.map((t) => t.id)).toEqual(Object.keys(TEMPLATES));
    expect(doc.templates.find((t) => t.id === "notion")).toEqual({
      id: "notion",
      display_name: "Notion",
      quirks: TEMPLATES.notion!.quirks,
      docs: TEMPLATES.notion!.docs,
    });
  });

  test("one template, piped, is a providers file that `ath serve` loads once the credential variables are set", async () => {
    const r = await cli.ath(["templates", "github"]);
    expect(r.code).toBe(0);
    const file = JSON.parse(r.stdout) as Record<string, Record<string, unknown>>;
    expect(Object.keys(file)).toEqual(["github"]);
    expect(Object.keys(file.github!).slice(0, 3)).toEqual(["template", "client_id", "client_secret"]);
    expect(file.github!.client_secret).toBe("${GITHUB_CLIENT_SECRET}");
    const dir = await tempDir("tpl");
    try {
      const path = `${dir.path}/providers.json`;
      await Bun.write(path, r.stdout);
      const loaded = loadProvidersFile(path, { GITHUB_CLIENT_ID: "Iv1.abc", GITHUB_CLIENT_SECRET: "s3cret" });
      expect(loaded.github!.client_id).toBe("Iv1.abc");
      expect(loaded.github!.token_endpoint).toBe("https://github.com/login/oauth/access_token");
      expect(ProviderConfig.parse(loaded.github)).toEqual(loaded.github!);
    } finally {
      await dir.remove();
    }
  });

  test("one template on a terminal shows its quirks and docs above the entry", async () => {
    const r = await cli.ath(["templates", "slack"], true);
    const text = stripAnsi(r.stdout);
    expect(text).toContain("slack — Slack");
    for (const q of TEMPLATES.slack!.quirks) expect(text).toContain(`• ${q}`);
    for (const d of TEMPLATES.slack!.docs) expect(text).toContain(d);
    expect(text).toContain("set SLACK_CLIENT_ID and SLACK_CLIENT_SECRET");
    expect(JSON.parse(text.slice(text.indexOf("\n{") + 1)).slack.scope_param).toBe("user_scope");
  });

  test("--format json for one template adds the filled entry", async () => {
    const r = await cli.ath(["templates", "dropbox", "--format", "json"]);
    const doc = JSON.parse(r.stdout) as { id: string; entry: Record<string, unknown> };
    expect(doc.id).toBe("dropbox");
    expect(doc.entry.extra_authorize_params).toEqual({ token_access_type: "offline" });
    expect(doc.entry.client_id).toBe("${DROPBOX_CLIENT_ID}");
  });

  test("an unknown id is a usage error naming the known ones", async () => {
    const text = await cli.ath(["templates", "githb"]);
    expect(text.code).toBe(2);
    expect(text.stderr).toBe("ath: unknown template 'githb' (known: dropbox, github, github-mcp, gitlab, google, linear, microsoft, notion, slack)\n");
    expect(text.stdout).toBe("");
    const json = await cli.ath(["templates", "githb", "--format", "json"]);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toEqual({
      error: { code: "USAGE", message: "unknown template 'githb' (known: dropbox, github, github-mcp, gitlab, google, linear, microsoft, notion, slack)", details: { template: "githb" } },
    });
  });
});
