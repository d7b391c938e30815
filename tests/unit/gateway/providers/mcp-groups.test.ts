/**
 * The providers file's `mcp_groups` (DESIGN §22): groups of MCP providers, and names that could collide refused at
 * start, naming both members — every problem at once, each at its path.
 */
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, loadGatewayFile } from "../../../../src/gateway/providers/file.ts";
import { tempDir } from "../../../helpers/net.ts";

const dir = await tempDir("groups");
afterAll(() => dir.remove());

const mcp = (url: string) => ({
  display_name: url,
  available_scopes: ["tools"],
  authorize_endpoint: "https://auth.example.com/authorize",
  token_endpoint: "https://auth.example.com/token",
  client_id: "c",
  client_secret: "s",
  mcp: { url },
});

function load(file: unknown) {
  const path = join(dir.path, `${crypto.randomUUID()}.json`);
  writeFileSync(path, JSON.stringify(file));
  return loadGatewayFile(path, {});
}

function problems(file: unknown): string {
  try {
    load(file);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error("the file was accepted");
}

test("groups are read beside the providers, the default prefix filled in where none is given", () => {
  const read = load({ mail: mcp("https://mail.example/mcp"), files: mcp("https://files.example/mcp"), mcp_groups: { work: { providers: ["mail", "files"] }, one: { providers: ["files"], prefix: "" } } });
  expect(Object.keys(read.providers)).toEqual(["mail", "files"]);
  expect(read.mcpGroups).toEqual({ work: { providers: ["mail", "files"], prefix: "{provider}_" }, one: { providers: ["files"], prefix: "" } });
  expect(load({ mail: mcp("https://mail.example/mcp") }).mcpGroups).toEqual({});
});

test("prefixes that could collide are refused naming both members; unknown, non-MCP and repeated members at their paths", () => {
  const { mcp: _none, ...api } = mcp("https://x.example/mcp");
  const message = problems({
    a: mcp("https://a.example/mcp"),
    b: mcp("https://b.example/mcp"),
    rest: api,
    mcp_groups: {
      flat: { providers: ["a", "b"], prefix: "" },
      bad: { providers: ["a", "nope", "rest", "a"] },
    },
  });
  expect(message).toContain('mcp_groups.flat.prefix: the names of a (prefix "") and b (prefix "") could collide');
  expect(message).toContain("mcp_groups.bad.providers.1: no provider nope in this file");
  expect(message).toContain("mcp_groups.bad.providers.2: rest is no MCP server");
  expect(message).toContain("mcp_groups.bad.providers.3: a is listed twice");
  expect(problems({ a: mcp("https://a.example/mcp"), mcp_groups: { "Bad Name": { providers: ["a"] } } })).toContain("mcp_groups.Bad Name: ");
});

test("at plain /mcp, provider ids one of whose default prefixes starts the other's are refused, naming both", () => {
  const message = problems({ a: mcp("https://a.example/mcp"), a_b: mcp("https://ab.example/mcp") });
  expect(message).toContain('the names of a (prefix "a_") and a_b (prefix "a_b_") could collide');
  // a fixed prefix per member that is prefix-free is fine
  expect(load({ a: mcp("https://a.example/mcp"), ab: mcp("https://ab.example/mcp"), mcp_groups: { g: { providers: ["a", "ab"], prefix: "x{provider}-" } } }).mcpGroups.g!.prefix).toBe("x{provider}-");
});
