/**
 * Runs the compiled CLI as a process with its own ATH_HOME, for the CLI e2e tests. The binary is compiled once per
 * test run from the current sources with scripts/build.ts's flags into a private temp path: a shared dist/ath may be
 * stale, or rebuilt by someone else while a test runs it. `spawnAth` gives the live process (`authorize --wait`).
 */
import { mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

const REPO = resolve(import.meta.dir, "../..");
export const ATH_BIN = join(tmpdir(), `ath-bin-${process.pid}`, "ath");

/** Compiles src/main.ts to ATH_BIN (once per process), with scripts/build.ts and so its flags. */
export function ensureBinary(): void {
  if (existsFile(ATH_BIN)) return;
  mkdirSync(dirname(ATH_BIN), { recursive: true });
  const build = Bun.spawnSync(
    [process.execPath, "scripts/build.ts", "--outfile", ATH_BIN],
    { cwd: REPO, stdout: "pipe", stderr: "pipe" },
  );
  if (build.exitCode !== 0) throw new Error(`build failed: ${build.stderr.toString()}`);
}

/** Removes the compiled binary (≈100 MB) and its temp directory. */
export function removeBinary(): void {
  rmSync(dirname(ATH_BIN), { recursive: true, force: true });
}

export interface AthResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (throws with the output when it is not exactly one document). */
  json(): any;
}

export function athEnv(home: string, env: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? "", HOME: home, ATH_HOME: home, NO_COLOR: "1", ...env };
}

/** Runs `dist/ath …args` to completion (stdin closed, stdout/stderr piped, so not a TTY). */
export async function ath(home: string, args: string[], env: Record<string, string> = {}): Promise<AthResult> {
  const p = spawnAth(home, args, env);
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return {
    code,
    stdout,
    stderr,
    json() {
      try {
        return JSON.parse(stdout);
      } catch {
        throw new Error(`not one JSON document (exit ${code}):\n${stdout}\n${stderr}`);
      }
    },
  };
}

export function spawnAth(home: string, args: string[], env: Record<string, string> = {}) {
  return Bun.spawn([ATH_BIN, ...args], { env: athEnv(home, env), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
}

/** Reads a stream until `pattern` matches the accumulated text; returns the match. */
export async function readUntil(stream: ReadableStream<Uint8Array>, pattern: RegExp): Promise<RegExpExecArray> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`stream ended before ${pattern}:\n${text}`);
    text += decoder.decode(value, { stream: true });
    const m = pattern.exec(text);
    if (m !== null) {
      reader.releaseLock();
      return m;
    }
  }
}

/** Every file and directory under `dir` with its permission bits. */
export function modes(dir: string): { path: string; mode: number; dir: boolean }[] {
  const out: { path: string; mode: number; dir: boolean }[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    out.push({ path: p, mode: st.mode & 0o777, dir: st.isDirectory() });
    if (st.isDirectory()) out.push(...modes(p));
  }
  return out;
}

// internal

function existsFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}
