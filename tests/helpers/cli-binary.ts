/**
 * The compiled CLI for the tests, and a way to run it as a process with its own ATH_HOME. One binary serves the whole
 * run: `dist/ath`, which `npm test` has just built, used only while `dist/ath.built-from` holds the build key of the
 * tree as it is now (scripts/build.ts: the commit, the Bun version, every byte of src/ and the manifests); otherwise
 * it is rebuilt first, so no test ever runs a binary older than its sources. `spawnAth` gives the live process
 * (`authorize --wait`).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { buildKey, keyFileOf } from "../../scripts/build.ts";

const REPO = resolve(import.meta.dir, "../..");
export const ATH_BIN = join(REPO, "dist/ath");

let current = false;

/**
 * Makes sure `dist/ath` is built from the sources as they are (checked once per test process, ≈ 30 ms; a build
 * when stale, ≈ 1 s) and returns its path. Throws when the build fails or the tree changed while it ran.
 */
export function ensureBinary(): string {
  if (current) return ATH_BIN;
  const key = buildKey();
  if (builtFrom() !== key) {
    const build = Bun.spawnSync([process.execPath, "scripts/build.ts"], { cwd: REPO, stdout: "pipe", stderr: "pipe" });
    if (build.exitCode !== 0) throw new Error(`build failed: ${build.stderr.toString()}`);
    if (builtFrom() !== key) throw new Error("dist/ath: the sources changed while it was being built; run the tests again");
  }
  current = true;
  return ATH_BIN;
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
  return Bun.spawn([ensureBinary(), ...args], { env: athEnv(home, env), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
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

/** The build key `dist/ath` was built from; undefined when it or its key file is missing. */
function builtFrom(): string | undefined {
  if (!existsSync(ATH_BIN)) return undefined;
  try {
    return readFileSync(keyFileOf(ATH_BIN), "utf8").trim();
  } catch {
    return undefined;
  }
}
