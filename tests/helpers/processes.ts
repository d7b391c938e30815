/**
 * Child processes for the CLI and README tests: the compiled `dist/ath` (or a shell line) run in a temporary
 * ATH_HOME, its output collected as it arrives so a test can wait for a line (the authorization URL, the
 * `listening on` line) while the process keeps running, then read its exit code and full output. Starting `ATH_BIN`
 * makes sure it is built from the sources as they are (tests/helpers/cli-binary.ts).
 */
import { resolve } from "node:path";
import { ATH_BIN, ensureBinary } from "./cli-binary.ts";

export { ATH_BIN };
export const REPO = resolve(import.meta.dir, "../..");

export interface Finished {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface Running {
  pid: number;
  /** Resolves with the first match of `pattern` in `stream` (now or later); rejects if the process exits first. */
  waitFor(stream: "stdout" | "stderr", pattern: RegExp): Promise<RegExpMatchArray>;
  /** Everything written so far, for failure messages. */
  output(): string;
  done: Promise<Finished>;
  kill(signal?: NodeJS.Signals): Promise<Finished>;
}

export interface SpawnOptions {
  env?: Record<string, string>;
  cwd?: string;
}

export function start(argv: string[], o: SpawnOptions = {}): Running {
  if (argv[0] === ATH_BIN) ensureBinary();
  const proc = Bun.spawn(argv, {
    cwd: o.cwd ?? REPO,
    env: { ...process.env, NO_COLOR: "1", ...o.env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const text = { stdout: "", stderr: "" };
  const waiters: { stream: "stdout" | "stderr"; pattern: RegExp; resolve: (m: RegExpMatchArray) => void; reject: (e: Error) => void }[] = [];
  const check = () => {
    for (const w of [...waiters]) {
      const m = w.pattern.exec(text[w.stream]);
      if (m) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(m);
      }
    }
  };
  const read = async (stream: "stdout" | "stderr") => {
    const decoder = new TextDecoder();
    const reader = proc[stream].getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      text[stream] += decoder.decode(value, { stream: true });
      check();
    }
  };
  const done = Promise.all([read("stdout"), read("stderr"), proc.exited]).then(([, , exitCode]) => {
    for (const w of waiters.splice(0)) w.reject(new Error(`${argv.join(" ")} exited ${exitCode} before printing ${w.pattern}:\n${text.stdout}${text.stderr}`));
    return { exitCode, ...text };
  });
  return {
    pid: proc.pid,
    waitFor: (stream, pattern) =>
      new Promise((resolve, reject) => {
        waiters.push({ stream, pattern, resolve, reject });
        check();
      }),
    output: () => `${text.stdout}${text.stderr}`,
    done,
    kill(signal = "SIGTERM") {
      proc.kill(signal);
      return done;
    },
  };
}

/** Runs to completion. */
export function run(argv: string[], o: SpawnOptions = {}): Promise<Finished> {
  return start(argv, o).done;
}

/** Runs `dist/ath` with `args`; throws with the output unless it exits 0. */
export async function ath(args: string[], o: SpawnOptions = {}): Promise<Finished> {
  const r = await run([ATH_BIN, ...args], o);
  if (r.exitCode !== 0) throw new Error(`ath ${args.join(" ")} exited ${r.exitCode}:\n${r.stdout}${r.stderr}`);
  return r;
}

/** The consent URL `ath authorize --wait` prints on stderr ("Open this URL …:\n  <url>"). */
export const AUTHORIZATION_URL = /^\s+(https?:\/\/\S+\/ath\/consent\/\S+)$/m;
