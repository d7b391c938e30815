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
  /** All of stdin as text (`admin login` reads the token from it, `admin providers add -` the entry). */
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
  onInterrupt: (cleanup: () => Promise<void>) => () => void;
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

async function openInBrowser(url: string): Promise<void> {
  const cmd = process.platform === "darwin" ? ["open", url] : process.platform === "win32" ? ["cmd", "/c", "start", "", url] : ["xdg-open", url];
  // Not awaited: xdg-open can run until the browser it started exits. Bun.spawn throws when it cannot start.
  const proc = Bun.spawn(cmd, { stdin: "ignore", stdout: "ignore", stderr: "ignore" });
  proc.unref();
}

function onInterrupt(cleanup: () => Promise<void>): () => void {
  const handler = (signal: NodeJS.Signals) => {
    void cleanup()
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
