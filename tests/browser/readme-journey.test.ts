/**
 * The README's quick start as a newcomer follows it once `ath` is installed: its command lines are parsed from
 * README.md (so the README cannot drift from what works) and run in order through `sh`, with `ath` on PATH (the
 * compiled binary, as install.sh or npm would put it there), in one temporary ATH_HOME. Only two things are changed,
 * both invisible to the journey: the gateway gets a free port instead of the documented one (rewritten consistently
 * in every command), and `authorize --wait` gets `--no-open`, Chromium opening the printed URL instead and clicking
 * the buttons the README names. What the README shows each command printing is compared with what it printed.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { mkdir, symlink } from "node:fs/promises";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { ensureBinary } from "../helpers/cli-binary.ts";
import { freePort, tempDir } from "../helpers/net.ts";
import { closeContexts, freshPage, sharedChromium } from "../helpers/chromium.ts";
import { clickAndWait } from "../helpers/person.ts";
import { ATH_BIN, REPO, run, start, type Finished, type Running } from "../helpers/processes.ts";
import { readQuickStart } from "../helpers/readme.ts";

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

  // what the README shows each command printing, it printed: the same lines, but for ids, secrets, times and ports
  for (const [i, command] of qs.commands.entries()) {
    const shown = shape(qs.printed[i] ?? "").filter((l) => !l.startsWith("✓"));
    const got = shape(outputs[i] ?? "");
    expect({ command, missing: shown.filter((l) => !got.includes(l)) }).toEqual({ command, missing: [] });
  }

  // the journey is the one the README promises: serve --demo, then register, authorize --wait, proxy
  expect(ran.map((c) => /^ath (\S+)/.exec(c)?.[1])).toEqual(["serve", "config", "register", "authorize", "proxy"]);
  expect(ran.at(-1)).toEndWith("proxy demo GET /notes");
  expect(last?.stdout).toContain(WELCOME);
  // Ctrl-C in the first terminal: the gateway stops gracefully
  expect((await gateway?.kill("SIGINT"))?.exitCode).toBe(0);
  gateway = undefined;
});

/** Lines as comparable text: the gateway's ids and secrets (`ath_…`), did:key identities, and runs of letters,
 * digits and `_-:.` that hold a digit or end in `…` (masked secrets, times, ports) become `#`; whitespace runs become one space; lines that are only `#`, punctuation or empty go. */
function shape(text: string): string[] {
  return text
    .replace(/\x1b\[[0-9;]*[A-Za-z]/g, "\n")
    .split(/\r?\n|\r/)
    .map((l) =>
      l
        .replace(/\b(ath_|did:key:)[\w:.\/?&=%+…-]*/g, "#")
        .replace(/[\w:.\/?&=%+-]*(\d[\w:.\/?&=%+-]*|…)/g, "#")
        .replace(/\s+/g, " ")
        .trim(),
    )
    .filter((l) => /[a-z]{3}/i.test(l.replace(/#/g, "")));
}

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
