/**
 * The two one-minute journeys of the front pages, as a newcomer follows them once `ath` is installed.
 *
 * The README's quick start: its command lines are parsed from
 * README.md (so the README cannot drift from what works) and run in order through `sh`, with `ath` on PATH (the
 * compiled binary, as install.sh or npm would put it there), in one temporary ATH_HOME. Only two things are changed,
 * both invisible to the journey: the gateway gets a free port instead of the documented one (rewritten consistently
 * in every command), and `authorize --wait` gets `--no-open`, Chromium opening the printed URL instead and clicking
 * the buttons the README names. What the README shows each command printing is compared with what it printed.
 *
 * docs/mcp-front-door.md's "Try it in one minute": `ath serve --demo` as the page shows it, its printed lines
 * compared, the MCP URL it prints the one the page gives the host; the host is the official MCP SDK client
 * (Streamable HTTP + its OAuth client provider), the person Chromium pressing the buttons the page names; the tools the
 * page names are the ones listed, and they work on the demo user's notes.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { mkdir, symlink } from "node:fs/promises";
import { join } from "node:path";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import type { Browser } from "playwright-core";
import { ensureBinary } from "../helpers/cli-binary.ts";
import { freePort, tempDir } from "../helpers/net.ts";
import { closeContexts, freshPage, sharedChromium } from "../helpers/chromium.ts";
import { clickAndWait } from "../helpers/person.ts";
import { ATH_BIN, REPO, run, start, type Finished, type Running } from "../helpers/processes.ts";
import { MemoryOAuthProvider, mcpClient, startClientHost } from "../helpers/mcp-oauth-client.ts";
import { readJourney, readQuickStart, shape } from "../helpers/readme.ts";

const WELCOME = "Welcome to Demo Notes";

let browser: Browser | undefined;
let gateway: Running | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  await gateway?.kill("SIGKILL");
  await closeContexts(browser);
  for (const c of cleanups) await c();
});

test("the README quick start, run as written against dist/ath with Chromium clicking the buttons it names, prints the demo's welcome note", async () => {
  const qs = await readQuickStart(REPO);
  const port = await freePort();
  const home = await tempDir("readme");
  cleanups.push(home.remove);
  // the ready line is waited for as text (piped, `ath serve` would log JSON)
  const bin = join(home.path, "bin");
  await mkdir(bin);
  await symlink(ATH_BIN, join(bin, "ath"));
  const env = { ATH_HOME: join(home.path, "home"), ATH_LOG_FORMAT: "text", PATH: `${bin}:${process.env.PATH}` };
  const local = (command: string) => command.replaceAll(`:${qs.servePort}`, `:${port}`);
  const sh = (command: string) => ["sh", "-c", command];
  const terminal = (command: string) => ["script", "-qefc", command, "/dev/null"];
  const ran: string[] = [];
  let last: Finished | undefined;
  const outputs: string[] = [];

  for (const command of qs.commands) {
    ran.push(command);
    if (/^npm (install|ci)\b/.test(command)) {
      // the machine running the tests was set up by `npm install`: the README's build runs when there is no binary;
      // one older than the sources is rebuilt (tests/helpers/cli-binary.ts)
      const build = command.split("&&").map((s) => s.trim()).filter((s) => !/^npm (install|ci)\b/.test(s));
      expect(build.length).toBeGreaterThan(0);
      if (!existsSync(ATH_BIN)) for (const step of build) expect((await run(sh(step))).exitCode).toBe(0);
      ensureBinary();
      continue;
    }
    if (/ serve\b/.test(command)) {
      const withPort = /--port[ =]\d+/.test(command) ? local(command) : `${command} --port ${port}`;
      gateway = start(sh(`exec ${withPort}`), { env });
      const [, url] = await gateway.waitFor("stdout", /^listening on (\S+)$/m);
      expect(url).toBe(`http://127.0.0.1:${port}`);
      // the lines after the ready one: where a person goes next
      await gateway.waitFor("stdout", /^MCP server \S+: \S+$/m);
      outputs.push(gateway.output());
      continue;
    }
    // at a terminal, as the reader is (`script` gives the command one): the output is the README's
    if (/ authorize\b.*--wait\b/.test(command)) {
      last = await approveInBrowser(start(terminal(`${local(command)} --no-open`), { env }), qs.buttons);
    } else {
      last = await run(terminal(local(command)), { env });
    }
    expect({ command, exit: last.exitCode, output: last.exitCode === 0 ? "" : last.stdout + last.stderr }).toEqual({ command, exit: 0, output: "" });
    outputs.push(last.stdout + last.stderr);
  }

  // what the README shows each command printing, it printed — and nothing else: the same lines, but for ids,
  // secrets, times and ports (a spinner's frames are not lines a reader keeps)
  for (const [i, command] of qs.commands.entries()) {
    const shown = shape(qs.printed[i] ?? "");
    const got = shape(outputs[i] ?? "").filter((l) => !l.includes("waiting for approval in the"));
    expect({ command, missing: shown.filter((l) => !got.includes(l) && !l.startsWith("✓")) }).toEqual({ command, missing: [] });
    expect({ command, unshown: got.filter((l) => !shown.includes(l)) }).toEqual({ command, unshown: [] });
  }

  // the journey is the one the README promises: serve --demo, then register, authorize --wait, proxy
  expect(ran.map((c) => /^ath (\S+)/.exec(c)?.[1])).toEqual(["serve", "config", "register", "authorize", "proxy"]);
  expect(ran.at(-1)).toEndWith("proxy demo GET /notes");
  expect(last?.stdout).toContain(WELCOME);
  // Ctrl-C in the first terminal: the gateway stops gracefully
  expect((await gateway?.kill("SIGINT"))?.exitCode).toBe(0);
  gateway = undefined;
});

/** The person's part of `authorize --wait`: open the URL the CLI prints, press each button the README names. */
async function approveInBrowser(cli: Running, buttons: string[]): Promise<Finished> {
  expect(buttons.length).toBeGreaterThan(0);
  browser ??= await sharedChromium();
  const { context, page } = await freshPage(browser);
  try {
    const [, url] = await cli.waitFor("stdout", /^\s+(https?:\/\/\S+\/ath\/consent\/\S+)\r?$/m);
    await page.goto(String(url));
    for (const label of buttons) await clickAndWait(page, label);
    expect(await page.textContent("body")).toContain("Authorization complete");
  } finally {
    await context.close();
  }
  return cli.done;
}

test("docs/mcp-front-door.md's one-minute journey: ath serve --demo fronts the sandbox MCP server; the SDK client signs in through Chromium and its tools work", async () => {
  const doc = await readJourney(REPO, "docs/mcp-front-door.md", "Try it in one minute");
  const serveAt = doc.commands.findIndex((c) => /^ath serve\b/.test(c));
  expect(doc.commands[serveAt]).toBe("ath serve --demo");
  const port = await freePort();
  const home = await tempDir("mcp-minute");
  const host = await startClientHost();
  cleanups.push(home.remove, host.stop);
  const local = (text: string) => text.replaceAll(":8787", `:${port}`);
  const served = start([ATH_BIN, "serve", "--demo", "--port", String(port)], { env: { ATH_HOME: home.path, ATH_LOG_FORMAT: "text" } });
  cleanups.push(async () => void (await served.kill("SIGKILL")));
  const [, mcpUrl] = await served.waitFor("stdout", /^MCP server demo: (\S+)$/m);
  // what the page shows `ath serve --demo` printing, it printed (but for the token and the port)
  const missing = shape(doc.printed[serveAt] ?? "").filter((l) => !shape(served.output()).includes(l));
  expect(missing).toEqual([]);
  // the URL the page tells the host to add is the one ath printed
  const add = doc.commands.find((c) => c.startsWith("claude mcp add"));
  expect(local(add?.split(" ").at(-1) ?? "")).toBe(String(mcpUrl));

  const provider = new MemoryOAuthProvider(host.redirectUrl, undefined, "One-minute Host");
  const first = mcpClient(String(mcpUrl), provider);
  await expect(first.client.connect(first.transport)).rejects.toBeInstanceOf(UnauthorizedError);
  browser ??= await sharedChromium();
  const { context, page } = await freshPage(browser);
  try {
    await page.goto(provider.authorizationUrl!.href);
    expect(await page.textContent("body")).toContain("One-minute Host");
    expect(doc.buttons).toEqual(["Approve", "Allow"]);
    for (const label of doc.buttons) await clickAndWait(page, label);
  } finally {
    await context.close();
  }
  const landing = host.landings.at(-1);
  expect(landing?.code).toStartWith("mcp_code_");
  await first.transport.finishAuth(landing!.code!);
  const { client, transport } = mcpClient(String(mcpUrl), provider);
  await client.connect(transport);
  try {
    // the tools the page names are the server's tools
    const named = /tools (`\w+`(?:, `\w+`)* and `\w+`)/.exec(doc.prose)?.[1]?.match(/\w+/g)?.filter((w) => w !== "and") ?? [];
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools.sort()).toEqual(named.sort());
    const listed = await client.callTool({ name: "list_notes", arguments: {} });
    expect((listed.content as { text: string }[])[0]!.text).toContain(WELCOME);
    const added = await client.callTool({ name: "add_note", arguments: { text: "written by an MCP host" } });
    const id = (added.structuredContent as { id: string }).id;
    const again = await client.callTool({ name: "list_notes", arguments: {} });
    expect((again.structuredContent as { notes: { id: string; text: string }[] }).notes.map((n) => n.text)).toContain("written by an MCP host");
    expect((await client.callTool({ name: "delete_note", arguments: { id } })).isError).toBeFalsy();
    // the host holds ath's token, bound to this URL; never the sandbox's
    expect(provider.saved?.access_token).toStartWith("ath_tk_");
  } finally {
    await client.close();
  }
  expect((await served.kill("SIGINT")).exitCode).toBe(0);
});
