/**
 * What a command needs from the outside world — HTTP, clock, output streams, TTY flags, environment, browser —
 * behind one object, so tests swap it (as gh passes HttpClient and IOStreams in its options structs).
 */
import { fstatSync, statSync, writeSync } from "node:fs";
import type { Fetch } from "../agent/http.ts";

export interface Deps {
  fetch: Fetch;
  env: Record<string, string | undefined>;
  /** Writes to stdout: text, or bytes as they are (`proxy` relays an upstream body unchanged). */
  stdout: (s: string | Uint8Array) => void;
  stderr: (s: string) => void;
  now: () => number;
  stdinTTY: boolean;
  /** All of stdin as text (`proxy --body -`; `admin login` reads the token from it, `admin providers add -` the entry). */
  readStdin: () => Promise<string>;
  stdoutTTY: boolean;
  stderrTTY: boolean;
  /**
   * Opens a URL in the user's browser. Resolves once the opener has started (it is not awaited: `xdg-open` may
   * not exit until the browser does); rejects only when it cannot start. Failures are reported, never fatal.
   */
  openUrl: (url: string) => Promise<void>;
  /**
   * Runs `cleanup` when the user interrupts (Ctrl-C, SIGTERM), then exits 130 / 143; returns the function that
   * removes the handler. `authorize --wait` uses it to drop its pending session.
   */
  onInterrupt: (cleanup: (signal: "SIGINT" | "SIGTERM") => Promise<void>) => () => void;
}

let current: Deps | undefined;

/** The dependencies in force: the process's own unless a test installed others with `setDeps`. */
export function getDeps(): Deps {
  current ??= processDeps();
  return current;
}

/** Installs dependencies (tests); returns a function restoring the previous ones. */
export function setDeps(overrides: Partial<Deps>): () => void {
  const previous = current;
  current = { ...processDeps(), ...overrides };
  return () => {
    current = previous;
  };
}

// internal

function processDeps(): Deps {
  const tty: Partial<Record<0 | 1 | 2, boolean>> = {};
  const terminal = (fd: 0 | 1 | 2) => (tty[fd] ??= isTerminal(fd));
  return {
    fetch: (input, init) => fetch(input, init),
    env: process.env,
    stdout: (s) => writeAll(1, s),
    stderr: (s) => writeAll(2, s),
    now: () => Date.now(),
    // Asked only when a command needs to know (colors, prompts, --wait): json output never does.
    get stdinTTY() {
      return terminal(0);
    },
    get stdoutTTY() {
      return terminal(1);
    },
    get stderrTTY() {
      return terminal(2);
    },
    readStdin: () => Bun.stdin.text(),
    openUrl: openInBrowser,
    onInterrupt,
  };
}

// Touching process.stdout (or importing node:tty) costs Bun ~15 ms of start-up, a third of the CLI's budget, so
// terminals are detected with fstat and output goes out with writeSync.

/** True when `fd` is a character device other than /dev/null, i.e. a terminal. */
function isTerminal(fd: number): boolean {
  try {
    const st = fstatSync(fd);
    return st.isCharacterDevice() && st.rdev !== (devNull ??= statSync("/dev/null").rdev);
  } catch {
    return false;
  }
}

let devNull: number | undefined;

/** Descriptors whose reader went away (EPIPE): later writes to them are dropped. */
const closed = new Set<number>();

/**
 * Writes all of `s`. When the reader has gone (`ath … | head`), the rest of the output — the error document of the
 * catch block included — is dropped quietly, as gh does, instead of ending in a stack trace; the command still
 * finishes and exits with its own code.
 */
function writeAll(fd: number, s: string | Uint8Array): void {
  if (closed.has(fd)) return;
  const buf = typeof s === "string" ? Buffer.from(s) : s;
  for (let off = 0; off < buf.length; ) {
    try {
      off += writeSync(fd, buf, off);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // EPIPE from a pipe, ECONNRESET from a socket pair whose reader closed with data unread: the reader is gone.
      if (code === "EPIPE" || code === "ECONNRESET") {
        closed.add(fd);
        return;
      }
      if (code !== "EAGAIN") throw e;
      Bun.sleepSync(1); // a non-blocking pipe is full: wait for the reader
    }
  }
}

/**
 * Opens `url` in the user's browser: `$BROWSER` first (a `:`-separated list as in Debian's sensible-browser; `%s`
 * stands for the URL, else it is appended), else the platform's opener. A Linux session without a display (over SSH,
 * on a console) has no browser to open: that is reported at once, so the person is told to open the URL themselves
 * instead of watching a spinner. An opener that fails exits at once (xdg-open without a browser: 3); one still
 * running after 3 s is taken as a browser that opened.
 */
async function openInBrowser(url: string): Promise<void> {
  let proc: ReturnType<typeof Bun.spawn> | undefined;
  let cmd: string[] = [];
  let failure: unknown;
  // the first of the candidates that starts (Bun.spawn throws when a command cannot start)
  for (cmd of browserCommands(url, process.env, process.platform)) {
    try {
      proc = Bun.spawn(cmd, { stdin: "ignore", stdout: "ignore", stderr: "ignore" });
      break;
    } catch (e) {
      failure = e;
    }
  }
  if (proc === undefined) throw new Error(`cannot start ${cmd[0]}: ${(failure as Error).message}`);
  proc.unref();
  const code = await Promise.race([proc.exited, new Promise<undefined>((resolve) => (setTimeout(resolve, 3000) as unknown as { unref(): void }).unref())]);
  if (code !== undefined && code !== 0) throw new Error(`${cmd[0]} exited with status ${code}`);
}

/** The commands that may open `url`, in order; throws when the session has no display to open a browser on. */
export function browserCommands(url: string, env: Record<string, string | undefined>, platform: string): string[][] {
  if (!/^https?:\/\//i.test(url)) throw new Error("only http(s) URLs are opened");
  const fromEnv = (env.BROWSER ?? "").split(":").filter((b) => b.trim() !== "");
  if (fromEnv.length > 0) {
    return fromEnv.map((browser) => {
      const words = browser.trim().split(/\s+/);
      return words.some((w) => w.includes("%s")) ? words.map((w) => w.replaceAll("%s", url)) : [...words, url];
    });
  }
  if (platform === "darwin") return [["open", url]];
  // No shell on any OS (DESIGN §14): `cmd /c start` would read `&`, `|`, `^` in the URL as commands.
  if (platform === "win32") return [["rundll32", "url.dll,FileProtocolHandler", url]];
  if (!env.DISPLAY && !env.WAYLAND_DISPLAY) {
    throw new Error(env.SSH_CONNECTION || env.SSH_TTY ? "this is an SSH session without a display" : "no display (DISPLAY is not set)");
  }
  return [["xdg-open", url]];
}

function onInterrupt(cleanup: (signal: "SIGINT" | "SIGTERM") => Promise<void>): () => void {
  const handler = (signal: NodeJS.Signals) => {
    void cleanup(signal === "SIGINT" ? "SIGINT" : "SIGTERM")
      .catch(() => undefined)
      .finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
  };
  process.once("SIGINT", handler);
  process.once("SIGTERM", handler);
  return () => {
    process.off("SIGINT", handler);
    process.off("SIGTERM", handler);
  };
}
