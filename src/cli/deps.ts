/**
 * What a command needs from the outside world — HTTP, clock, output streams, TTY flags, environment, browser —
 * behind one object, so tests swap it (as gh passes HttpClient and IOStreams in its options structs).
 */
import type { Fetch } from "../agent/http.ts";

export interface Deps {
  fetch: Fetch;
  env: Record<string, string | undefined>;
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  now: () => number;
  stdinTTY: boolean;
  stdoutTTY: boolean;
  stderrTTY: boolean;
  /** Opens a URL in the user's browser; failures are reported by the caller, never fatal. */
  openUrl: (url: string) => Promise<void>;
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
  return {
    fetch: (input, init) => fetch(input, init),
    env: process.env,
    stdout: (s) => void process.stdout.write(s),
    stderr: (s) => void process.stderr.write(s),
    now: () => Date.now(),
    stdinTTY: process.stdin.isTTY === true,
    stdoutTTY: process.stdout.isTTY === true,
    stderrTTY: process.stderr.isTTY === true,
    openUrl: openInBrowser,
  };
}

async function openInBrowser(url: string): Promise<void> {
  const cmd = process.platform === "darwin" ? ["open", url] : process.platform === "win32" ? ["cmd", "/c", "start", "", url] : ["xdg-open", url];
  const proc = Bun.spawn(cmd, { stdin: "ignore", stdout: "ignore", stderr: "ignore" });
  const code = await proc.exited;
  if (code !== 0) throw new Error(`${cmd[0]} exited with ${code}`);
}
