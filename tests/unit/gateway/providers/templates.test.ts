/** Built-in provider templates (DESIGN §11): the data each one carries, and the merge rule for entries naming one. */
import { describe, expect, test } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { loadProvidersFile } from "../../../../src/gateway/providers/file.ts";
import { sectionOf } from "../../../helpers/readme.ts";
import { formatIssues, ProviderConfig } from "../../../../src/protocol/index.ts";
import { allowedByScopeRules } from "../../../../src/gateway/rules/scope-rules.ts";
import { canonicalRequest } from "../../../../src/gateway/rules/canonical-request.ts";
import { applyTemplate, exampleEntry, TEMPLATES, UnknownTemplateError } from "../../../../src/gateway/providers/templates/index.ts";

const REQUIRED = ["github", "gitlab", "google", "microsoft", "slack", "notion", "linear", "dropbox"];
/** DESIGN §11: each template's identity endpoint (relative to its api_base_url). */
const IDENTITY: Record<string, [string, string]> = {
  github: ["GET", "/user"],
  gitlab: ["GET", "/user"],
  google: ["GET", "/oauth2/v3/userinfo"],
  microsoft: ["GET", "/me"],
  slack: ["POST", "/auth.test"],
  notion: ["GET", "/users/me"],
  linear: ["POST", "/graphql"],
  dropbox: ["POST", "/users/get_current_account"],
};
const credentials = { client_id: "id-123", client_secret: "secret-456" };

describe("the built-in templates", () => {
  test("at least github, gitlab, google, microsoft, slack, notion, linear and dropbox are built in, keyed by their id", () => {
    for (const id of REQUIRED) expect(TEMPLATES[id]?.id).toBe(id);
    expect(Object.keys(TEMPLATES)).toEqual([...Object.keys(TEMPLATES)].sort());
  });

  for (const t of Object.values(TEMPLATES)) {
    describe(t.id, () => {
      test("filled with client credentials, it is a valid providers entry", () => {
        const parsed = ProviderConfig.safeParse(applyTemplate({ template: t.id, ...credentials }));
        expect(parsed.success ? [] : formatIssues(parsed.error)).toEqual([]);
      });
      test("every offered scope has a consent-page description and, where the template has scope_rules, rules", () => {
        for (const scope of t.entry.available_scopes) {
          expect(t.entry.scope_descriptions?.[scope], scope).toBeString();
          if (t.entry.scope_rules) expect(t.entry.scope_rules[scope]?.length ?? 0, scope).toBeGreaterThan(0);
        }
        expect(Object.keys(t.entry.scope_rules ?? {}).filter((s) => s !== "*" && !t.entry.available_scopes.includes(s))).toEqual([]);
        expect((t.entry.extra_scopes ?? []).filter((s) => t.entry.available_scopes.includes(s))).toEqual([]);
      });
      // A remote-MCP template (DESIGN §18) is called through /mcp/{id}, not the REST proxy: no identity endpoint.
      test.skipIf(t.entry.mcp !== undefined)("its identity endpoint is allowed under every scope it offers (the \"*\" key, DESIGN §11)", () => {
        const [method, path] = IDENTITY[t.id]!;
        const request = canonicalRequest(method, path.slice(1), "");
        for (const scope of t.entry.available_scopes) expect({ scope, allowed: allowedByScopeRules(t.entry.scope_rules ?? {}, [scope], request) }).toEqual({ scope, allowed: true });
        expect(allowedByScopeRules(t.entry.scope_rules ?? {}, [], request)).toBe(false);
      });
      test("it cites the provider's documentation over https and lists its quirks", () => {
        expect(t.docs.length).toBeGreaterThan(0);
        for (const url of t.docs) expect(new URL(url).protocol).toBe("https:");
        expect(t.quirks.length).toBeGreaterThan(0);
      });
      test("every endpoint is https", () => {
        const e = t.entry;
        for (const url of [e.authorize_endpoint, e.token_endpoint, e.api_base_url, e.userinfo_endpoint, e.revocation_endpoint]) {
          if (url !== undefined) expect(new URL(url).protocol).toBe("https:");
        }
      });
    });
  }
});

describe("scope_rules of the templates allow the main API calls and nothing of another scope", () => {
  const cases: [string, string, string, string, boolean][] = [
    ["github", "read:user", "GET", "/user", true],
    ["github", "read:user", "GET", "/repos/o/r/issues", false],
    ["github", "repo", "POST", "/repos/o/r/issues", true],
    ["gitlab", "read_api", "GET", "/projects/42/issues", true],
    ["gitlab", "read_api", "POST", "/projects/42/issues", false],
    ["google", "https://www.googleapis.com/auth/gmail.readonly", "GET", "/gmail/v1/users/me/messages", true],
    ["google", "https://www.googleapis.com/auth/gmail.readonly", "POST", "/gmail/v1/users/me/messages/send", false],
    ["google", "https://www.googleapis.com/auth/gmail.send", "POST", "/gmail/v1/users/me/messages/send", true],
    ["microsoft", "User.Read", "GET", "/me", true],
    ["microsoft", "Mail.Read", "POST", "/me/sendMail", false],
    ["slack", "channels:history", "GET", "/conversations.history", true],
    ["slack", "channels:history", "POST", "/chat.postMessage", false],
    ["notion", "read_content", "POST", "/search", true],
    ["notion", "read_content", "PATCH", "/pages/abc", false],
    ["notion", "insert_content", "POST", "/pages", true],
    ["linear", "read", "POST", "/graphql", true],
    ["dropbox", "files.metadata.read", "POST", "/files/list_folder", true],
    ["dropbox", "files.metadata.read", "POST", "/files/delete_v2", false],
  ];
  for (const [id, scope, method, path, allowed] of cases) {
    test(`${id}: ${scope} ${allowed ? "allows" : "does not allow"} ${method} ${path}`, () => {
      expect(allowedByScopeRules(TEMPLATES[id]!.entry.scope_rules ?? {}, [scope], canonicalRequest(method, path.slice(1), ""))).toBe(allowed);
    });
  }
});

describe("the merge rule — the template fills every field, the entry's fields override", () => {
  test("fields the entry leaves out come from the template; the entry's own win, whole", () => {
    const merged = applyTemplate({
      template: "github",
      ...credentials,
      display_name: "GitHub Enterprise",
      authorize_endpoint: "https://ghe.example.com/login/oauth/authorize",
      scope_descriptions: { repo: "Repositories." },
    });
    expect(merged.display_name).toBe("GitHub Enterprise");
    expect(merged.authorize_endpoint).toBe("https://ghe.example.com/login/oauth/authorize");
    expect(merged.token_endpoint).toBe("https://github.com/login/oauth/access_token");
    expect(merged.scope_descriptions).toEqual({ repo: "Repositories." });
    expect(merged.template).toBe("github");
  });
  test("an entry without a template is returned as it is", () => {
    expect(applyTemplate({ display_name: "x" })).toEqual({ display_name: "x" });
  });
  test("filling never changes the template itself", () => {
    const merged = applyTemplate({ template: "slack", ...credentials });
    (merged.scope_rules as Record<string, string[]>)["chat:write"]!.push("DELETE /everything");
    expect(TEMPLATES.slack!.entry.scope_rules!["chat:write"]).not.toContain("DELETE /everything");
  });
  test("an unknown template names the template and the known ones", () => {
    expect(() => applyTemplate({ template: "githb" })).toThrow(UnknownTemplateError);
    expect(() => applyTemplate({ template: "githb" })).toThrow(
      "unknown template 'githb' (known: dropbox, github, github-mcp, gitlab, google, linear, microsoft, notion, slack)",
    );
    expect(() => applyTemplate({ template: "toString" })).toThrow(UnknownTemplateError);
  });
  test("a wrong override fails validation naming the field", () => {
    const parsed = ProviderConfig.safeParse(applyTemplate({ template: "notion", ...credentials, token_endpoint: "not a url", scope_separator: ";" }));
    expect(parsed.success).toBe(false);
    expect(formatIssues(parsed.error!, "providers.notion")).toEqual([
      "providers.notion.token_endpoint: Invalid http(s) URL",
      'providers.notion.scope_separator: Invalid option: expected one of " "|","',
    ]);
  });
  test("the example entry carries ${ENV} references for the credentials", () => {
    const e = exampleEntry(TEMPLATES.github!);
    expect(e.client_id).toBe("${GITHUB_CLIENT_ID}");
    expect(e.client_secret).toBe("${GITHUB_CLIENT_SECRET}");
    expect(e.template).toBe("github");
  });
});

describe("provider config — the §11 fields", () => {
  const base = { display_name: "P", available_scopes: ["a"], authorize_endpoint: "https://p/a", token_endpoint: "https://p/t", ...credentials };
  test("an entry without them is valid and keeps the RFC behaviour (the fields stay unset)", () => {
    const c = ProviderConfig.parse(base);
    expect(c.token_request_format).toBeUndefined();
    expect(c.pkce).toBeUndefined();
    expect(c.token_endpoint_auth_method).toBe("client_secret_post");
  });
  test("api_headers may not set the gateway's own headers, nor break a header line", () => {
    for (const name of ["Authorization", "host", "Cookie", "X-ATH-Agent-ID", "X-HTTP-Method-Override", "Transfer-Encoding", "bad name"]) {
      expect(ProviderConfig.safeParse({ ...base, api_headers: { [name]: "v" } }).success, name).toBe(false);
    }
    expect(ProviderConfig.safeParse({ ...base, api_headers: { "Notion-Version": "a\r\nX-Evil: 1" } }).success).toBe(false);
    expect(ProviderConfig.safeParse({ ...base, api_headers: { "Notion-Version": "2025-09-03" } }).success).toBe(true);
  });
  test("user_id_source needs what it reads: userinfo an endpoint, token_response a path", () => {
    const a = ProviderConfig.safeParse({ ...base, user_id_source: "userinfo" });
    const b = ProviderConfig.safeParse({ ...base, user_id_source: "token_response" });
    expect(formatIssues(a.error!)).toEqual(["userinfo_endpoint: required when user_id_source is userinfo"]);
    expect(formatIssues(b.error!)).toEqual(["user_id_path: required when user_id_source is token_response"]);
  });
  test("paths are dot paths; scope_param is a parameter name or null", () => {
    expect(ProviderConfig.safeParse({ ...base, token_path: "authed_user" }).success).toBe(true);
    expect(ProviderConfig.safeParse({ ...base, token_path: "a..b" }).success).toBe(false);
    expect(ProviderConfig.safeParse({ ...base, scope_param: null }).success).toBe(true);
    expect(ProviderConfig.safeParse({ ...base, scope_param: "scope&x=1" }).success).toBe(false);
  });
});

describe("docs/serve.md's Connect a real provider section and the example providers file", () => {
  const repo = resolve(import.meta.dir, "../../../..");
  const env = { GITHUB_CLIENT_ID: "Ov23li-test", GITHUB_CLIENT_SECRET: "s", GOOGLE_CLIENT_ID: "g", GOOGLE_CLIENT_SECRET: "s" };

  test("the GitHub entry it shows is a providers file ath serve loads, filled from the github template", async () => {
    const section = sectionOf(await readFile(join(repo, "docs/serve.md"), "utf8"), "Connect a real provider");
    const json = /```json\n([\s\S]*?)```/.exec(section)?.[1]?.replace(/^ {3}/gm, "");
    expect(json).toBeDefined();
    const dir = await mkdtemp(join(tmpdir(), "ath-readme-"));
    try {
      await writeFile(join(dir, "providers.json"), json!);
      const loaded = loadProvidersFile(join(dir, "providers.json"), env);
      expect(loaded.github).toEqual(ProviderConfig.parse(applyTemplate({ template: "github", client_id: "Ov23li-test", client_secret: "s" })));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    expect(section).toContain("{base_url}/ath/callback");
  });

  test("its table has one row per template", async () => {
    const section = sectionOf(await readFile(join(repo, "docs/serve.md"), "utf8"), "Connect a real provider");
    const rows = [...section.matchAll(/^\| `([a-z]+)` \|/gm)].map((m) => m[1]);
    expect(rows).toEqual(["github", "gitlab", "google", "microsoft", "slack", "notion", "linear", "dropbox"]);
    // the REST API templates; the remote-MCP ones (github-mcp) are documented in docs/mcp-front-door.md
    expect([...rows].sort()).toEqual(Object.keys(TEMPLATES).filter((id) => !TEMPLATES[id]!.entry.mcp));
  });

  test("scripts/examples/providers.json loads, its entries filled from templates", () => {
    const loaded = loadProvidersFile(join(repo, "scripts/examples/providers.json"), env);
    expect(loaded.github?.token_endpoint).toBe("https://github.com/login/oauth/access_token");
    expect(loaded["google-calendar"]?.extra_authorize_params).toEqual({ access_type: "offline", prompt: "consent" });
  });
});
