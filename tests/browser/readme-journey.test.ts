/**
 * The README's quick start as a newcomer follows it: its ```sh command lines are parsed from README.md (so the
 * README cannot drift from what works) and run in order through `sh`, from the repository, in one temporary
 * ATH_HOME, against the compiled binary. Only two things are changed, both invisible to the journey: the gateway
 * gets a free port instead of the documented one (rewritten consistently in every command), and `authorize --wait`
 * gets `--no-open`, Chromium opening the printed URL instead and clicking the buttons the README names.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import type { Browser } from "playwright-core";
import { freePort, tempDir } from "../helpers/net.ts";
import { freshPage, launchChromium } from "../helpers/chromium.ts";
import { clickAndWait } from "../helpers/person.ts";
import { ATH_BIN, AUTHORIZATION_URL, REPO, run, start, type Finished, type Running } from "../helpers/processes.ts";
import { readQuickStart } from "../helpers/readme.ts";

const WELCOME = "Welcome to Demo Notes";

let browser: Browser | undefined;
let gateway: Running | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  await gateway?.kill("SIGKILL");
  await browser?.close();
  for (const c of cleanups) await c();
});

test("the README quick start, run as written against dist/ath with Chromium clicking the buttons it names, prints the demo's welcome note", async () => {
  const qs = await readQuickStart(REPO);
  const port = await freePort();
  const home = await tempDir("readme");
  cleanups.push(home.remove);
  // the ready line is waited for as text (piped, `ath serve` would log JSON)
  const env = { ATH_HOME: home.path, ATH_LOG_FORMAT: "text" };
  const local = (command: string) => command.replaceAll(`:${qs.servePort}`, `:${port}`);
  const sh = (command: string) => ["sh", "-c", command];
  const ran: string[] = [];
  let last: Finished | undefined;

  for (const command of qs.commands) {
    ran.push(command);
    if (/^npm (install|ci)\b/.test(command)) {
      // the machine running the tests was set up by `npm install`; build only if the binary is missing
      const build = command.split("&&").map((s) => s.trim()).filter((s) => !/^npm (install|ci)\b/.test(s));
      expect(build.length).toBeGreaterThan(0);
      if (!existsSync(ATH_BIN)) for (const step of build) expect((await run(sh(step))).exitCode).toBe(0);
      continue;
    }
    if (/ serve\b/.test(command)) {
      const withPort = /--port[ =]\d+/.test(command) ? local(command) : `${command} --port ${port}`;
      gateway = start(sh(`exec ${withPort}`), { env });
      const [, url] = await gateway.waitFor("stdout", /^listening on (\S+)$/m);
      expect(url).toBe(`http://127.0.0.1:${port}`);
      continue;
    }
    if (/ authorize\b.*--wait\b/.test(command)) {
      last = await approveInBrowser(start(sh(`${local(command)} --no-open`), { env }), qs.buttons);
    } else {
      last = await run(sh(local(command)), { env });
    }
    expect({ command, exit: last.exitCode, output: last.exitCode === 0 ? "" : last.stdout + last.stderr }).toEqual({ command, exit: 0, output: "" });
  }

  // the journey is the one the issue promises: install+build, serve --demo, register, authorize --wait, proxy
  expect(ran.map((c) => /^\S+ (\S+)/.exec(c.replace(/^npm install && /, ""))?.[1])).toEqual(["bun", "serve", "config", "register", "authorize", "proxy"]);
  expect(ran.at(-1)).toEndWith("proxy demo GET /notes");
  expect(last?.stdout).toContain(WELCOME);
  // Ctrl-C in the first terminal: the gateway stops gracefully
  expect((await gateway?.kill("SIGINT"))?.exitCode).toBe(0);
  gateway = undefined;
});

/** The person's part of `authorize --wait`: open the URL the CLI prints, press each button the README names. */
async function approveInBrowser(cli: Running, buttons: string[]): Promise<Finished> {
  expect(buttons.length).toBeGreaterThan(0);
  browser ??= await launchChromium();
  const { context, page } = await freshPage(browser);
  try {
    const [, url] = await Promise.any([cli.waitFor("stdout", AUTHORIZATION_URL), cli.waitFor("stderr", AUTHORIZATION_URL)]);
    await page.goto(String(url));
    for (const label of buttons) await clickAndWait(page, label);
    expect(await page.textContent("body")).toContain("Authorization complete");
  } finally {
    await context.close();
  }
  return cli.done;
}
