/**
 * In-process harness for the CLI unit tests: a temp ATH_HOME, and `runAth(argv)` which runs `main()` with captured
 * stdout/stderr, chosen TTY flags and a chosen fetch — the real gateway in process (tests/helpers/cli-in-process.ts)
 * or, for an answer only a scripted server gives, a fetch built for that one case.
 */
import { afterEach, beforeEach } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setDeps, type Deps } from "../../src/cli/kit/deps.ts";
import { main } from "../../src/main.ts";

export interface RunResult {
  code: number;
  /** stdout decoded as UTF-8. */
  stdout: string;
  stderr: string;
  /** stdout exactly as written. */
  stdoutBytes: Uint8Array;
}

export interface RunOptions {
  tty?: boolean;
  fetch?: Deps["fetch"];
  openUrl?: Deps["openUrl"];
  env?: Record<string, string>;
  now?: () => number;
  /** What stdin holds (`--body -`). */
  stdin?: string;
}

/** Runs `ath argv` in process against `home`. */
export async function runAth(home: string, argv: string[], o: RunOptions = {}): Promise<RunResult> {
  const stdout: Uint8Array[] = [];
  let stderr = "";
  const tty = o.tty ?? false;
  const restore = setDeps({
    env: { ATH_HOME: home, ...o.env },
    stdout: (s) => void stdout.push(typeof s === "string" ? new TextEncoder().encode(s) : s.slice()),
    stderr: (s) => void (stderr += s),
    readStdin: async () => o.stdin ?? "",
    stdinTTY: tty,
    stdoutTTY: tty,
    stderrTTY: false,
    ...(o.fetch === undefined ? {} : { fetch: o.fetch }),
    ...(o.now === undefined ? {} : { now: o.now }),
    openUrl: o.openUrl ?? (async () => {}),
  });
  try {
    const code = await main(argv, (s) => void stdout.push(new TextEncoder().encode(s)));
    const stdoutBytes = new Uint8Array(Buffer.concat(stdout));
    return { code, stdout: new TextDecoder().decode(stdoutBytes), stderr, stdoutBytes };
  } finally {
    restore();
  }
}

/** A fresh temp ATH_HOME; `cleanup` removes it. */
export async function tempHome(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "ath-cli-"));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Per test: a fresh temporary home (beforeEach/afterEach), for tests that need no gateway. */
export function homeFixture() {
  let current: { dir: string; cleanup: () => Promise<void> } | undefined;
  beforeEach(async () => {
    current = await tempHome();
  });
  afterEach(() => current?.cleanup());
  return {
    get home() {
      if (!current) throw new TypeError("homeFixture is used outside a test");
      return current;
    },
  };
}
