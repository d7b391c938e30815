/**
 * The journeys of the docs, run as written against the compiled binary so the docs cannot rot:
 *  - docs/agents.md's "A whole journey": every command of its ```sh block through `sh`, `ath` on PATH, in a fresh
 *    ATH_HOME, against `ath serve --demo`; each prints exactly one JSON document on stdout and exits as its comment
 *    says (`# exit 3 NO_TOKEN`: that exit code and that error code, else 0); `authorize --wait --format json` hands
 *    its URL over as one JSON line on stderr, which Chromium opens, clicking what the README's Quick start names.
 *  - the README's note for machines without a browser: `authorize … --no-wait`, the code the gateway's page shows,
 *    `ath token --code <that code>`, then the Quick start's `proxy`.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdir, readFile, symlink } from "node:fs/promises";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { closeContexts, freshPage, sharedChromium } from "../helpers/chromium.ts";
import { freePort, tempDir } from "../helpers/net.ts";
import { clickAndWait } from "../helpers/person.ts";
import { ATH_BIN, REPO, run, start, type Running } from "../helpers/processes.ts";
import { readQuickStart, sectionOf, shellLines } from "../helpers/readme.ts";

let browser: Browser | undefined;
let gateway: Running | undefined;
let url = "";
let documentedPort = 0;
let buttons: string[] = [];
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  const qs = await readQuickStart(REPO);
  documentedPort = qs.servePort;
  buttons = qs.buttons;
  const port = await freePort();
  const home = await tempDir("docs-gw");
  cleanups.push(home.remove);
  gateway = start([ATH_BIN, "serve", "--demo", "--port", String(port)], { env: { ATH_HOME: home.path, ATH_LOG_FORMAT: "text" } });
  [, url = ""] = await gateway.waitFor("stdout", /^listening on (\S+)$/m);
  browser = await sharedChromium();
});

afterAll(async () => {
  await gateway?.kill("SIGKILL");
  await closeContexts(browser);
  for (const c of cleanups) await c();
});

/** A fresh agent: its own ATH_HOME, `ath` on PATH; commands rewritten to the test gateway's port. */
async function agent(name: string) {
  const dir = await tempDir(`docs-${name}`);
  cleanups.push(dir.remove);
  await mkdir(join(dir.path, "bin"));
  await symlink(ATH_BIN, join(dir.path, "bin", "ath"));
  const env = { ATH_HOME: join(dir.path, "home"), PATH: `${join(dir.path, "bin")}:${process.env.PATH}` };
  const local = (command: string) => command.replaceAll(`:${documentedPort}`, `:${new URL(url).port}`);
  return { env, local };
}

/** The person: opens `link` in a fresh browser context and presses the Quick start's buttons; returns the page text. */
async function approve(link: string): Promise<string> {
  const { context, page } = await freshPage(browser!);
  try {
    await page.goto(link);
    for (const label of buttons) await clickAndWait(page, label);
    return (await page.textContent("body")) ?? "";
  } finally {
    await context.close();
  }
}

test("docs/agents.md's whole journey: one JSON document per command, the exit codes and error codes it documents", async () => {
  const page = await readFile(join(REPO, "docs/agents.md"), "utf8");
  const { commands } = shellLines(sectionOf(page, "A whole journey"));
  expect(commands.length).toBeGreaterThan(5);
  const { env, local } = await agent("journey");
  const seen: string[] = [];
  for (const command of commands) {
    const [, exit = "0", code] = /# exit (\d+) (\w+)\s*$/.exec(command) ?? [];
    const sh = ["sh", "-c", local(command)];
    let r;
    if (/ authorize\b.*--wait\b/.test(command)) {
      const cli = start(sh, { env });
      const [line] = await cli.waitFor("stderr", /^\{"authorization_url".*\}$/m);
      const handed = JSON.parse(line) as { authorization_url: string; ath_session_id: string; redirect_uri: string };
      expect(handed.redirect_uri).toStartWith("http://127.0.0.1:");
      expect(await approve(handed.authorization_url)).toContain("Authorization complete");
      r = await cli.done;
    } else {
      r = await run(sh, { env });
    }
    const doc = JSON.parse(r.stdout); // exactly one JSON document, or this throws
    expect({ command, exit: r.exitCode, code: doc.error?.code }).toEqual({ command, exit: Number(exit), code });
    seen.push(command.split(" ")[1]!);
    if (/ proxy\b/.test(command) && r.exitCode === 0) expect(doc.body.notes[0].text).toContain("Welcome to Demo Notes");
    if (/ status\b/.test(command)) expect(doc.registrations[0].tokens[0]).toMatchObject({ provider_id: "demo", expired: false });
  }
  expect(seen).toEqual(expect.arrayContaining(["register", "authorize", "proxy", "revoke"]));
});

test("the README's note for machines without a browser: --no-wait, the code from the gateway's page, ath token", async () => {
  const readme = await readFile(join(REPO, "README.md"), "utf8");
  const quick = sectionOf(readme, "Quick start");
  const noWait = /`(ath authorize [^`]*--no-wait)`/.exec(quick)?.[1];
  const token = /`(ath token --code) <that code>`/.exec(quick)?.[1];
  expect({ noWait: noWait !== undefined, token: token !== undefined }).toEqual({ noWait: true, token: true });
  const { env, local } = await agent("headless");
  const qs = await readQuickStart(REPO);
  const setup = qs.commands.filter((c) => / (config|register)\b/.test(c));
  for (const c of setup) expect((await run(["sh", "-c", local(c)], { env })).exitCode).toBe(0);
  const started = await run(["sh", "-c", noWait!], { env });
  expect(started.exitCode).toBe(0);
  const link = /(https?:\/\/\S+\/ath\/consent\/\S+)/.exec(started.stdout)?.[1];
  expect(link).toBeDefined();
  const shown = await approve(link!);
  const code = /(ath_code_[\w-]+)/.exec(shown)?.[1];
  expect(code).toBeDefined();
  const saved = await run(["sh", "-c", `${token} ${code}`], { env });
  expect({ exit: saved.exitCode, err: saved.stderr }).toMatchObject({ exit: 0 });
  const proxy = await run(["sh", "-c", local(qs.commands.at(-1)!)], { env });
  expect({ exit: proxy.exitCode, out: proxy.stdout }).toMatchObject({ exit: 0, out: expect.stringContaining("Welcome to Demo Notes") });
});
