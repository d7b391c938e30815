/**
 * Runs `ath serve` as a real process for the e2e tests (source via Bun, or the compiled `dist/ath`), waits for its
 * `listening on <base_url>` line, and stops, kills (SIGKILL) or restarts it on the same port and data dir.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { ProviderConfigInput } from "../../src/protocol/index.ts";
import { ATH_BIN, ensureBinary } from "./cli-binary.ts";
import { eventually } from "./lifecycle.ts";
import { freePort, randomString, tempDir } from "./net.ts";

const REPO = resolve(import.meta.dir, "../..");

/** Rate limits off: e2e tests register and call far faster than a person would. */
export const QUIET_LIMITS = { ATH_RATE_LIMIT_REGISTER: "0", ATH_RATE_LIMIT_AUTH: "0", ATH_RATE_LIMIT_PROXY: "0" };

export interface GatewayOptions {
  /** The providers file content (keyed by provider id); `${ENV}` references are resolved from `env`. */
  providers: Record<string, Partial<ProviderConfigInput> & Record<string, unknown>>;
  /** Port to listen on (choose it first when the upstream needs `<base>/ath/callback`). Default: a free port. */
  port?: number;
  dataDir?: string;
  adminToken?: string;
  extraArgs?: string[];
  env?: Record<string, string>;
  /** Run the compiled `dist/ath` (or the executable at this path) instead of `bun src/main.ts`. */
  binary?: boolean | string;
  /** Words put before the command, e.g. a shell that sets the signal dispositions the gateway inherits. */
  launcher?: string[];
  /** `--base-url` when a proxy in front is the gateway's public address (default: its own listener). */
  publicUrl?: string;
}

export interface Gateway {
  baseUrl: string;
  port: number;
  dataDir: string;
  adminToken: string;
  providersFile: string;
  /** Everything the process wrote to stdout and stderr so far (for failure messages). */
  output(): string;
  /**
   * Resolves once `output()` matches `pattern`. stdout and stderr are read from pipes of their own: a line the gateway
   * wrote before an answer (or after its ready line) may be read after it.
   */
  waitForOutput(pattern: RegExp): Promise<void>;
  /** The running process's id (the gateway itself: a launcher must `exec` it). */
  pid(): number | undefined;
  stop(signal?: NodeJS.Signals): Promise<number>;
  /** SIGKILL: no graceful shutdown. */
  kill(): Promise<void>;
  /** Starts the gateway again with the same arguments, port and data dir (after stop/kill). */
  restart(): Promise<void>;
  /** Stops the process if running and removes the temporary directories. */
  cleanup(): Promise<void>;
}

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const port = options.port ?? (await freePort());
  const baseUrl = options.publicUrl ?? `http://127.0.0.1:${port}`;
  const home = await tempDir("gw");
  const dataDir = options.dataDir ?? join(home.path, "data");
  await mkdir(dataDir, { recursive: true });
  const providersFile = join(home.path, "providers.json");
  await writeFile(providersFile, JSON.stringify(options.providers, null, 2));
  const adminToken = options.adminToken ?? `admin_${randomString(24)}`;
  const command =
    typeof options.binary === "string"
      ? [options.binary === ATH_BIN ? ensureBinary() : options.binary]
      : options.binary
        ? [ensureBinary()]
        : [process.execPath, join(REPO, "src/main.ts")];
  const args = [
    ...(options.launcher ?? []),
    ...command,
    "serve",
    "--host", "127.0.0.1",
    "--port", String(port),
    "--base-url", baseUrl,
    "--providers", providersFile,
    "--data-dir", dataDir,
    "--admin-token", adminToken,
    "--dev",
    ...(options.extraArgs ?? []),
  ];
  let log = "";
  let proc: ReturnType<typeof spawn> | undefined;
  /** The running process's pipes read to their end: what `stop` and `kill` wait for, so `output()` then holds everything. */
  let reading: Promise<void>[] = [];

  function spawn() {
    return Bun.spawn(args, {
      cwd: home.path,
      // Text logs (the ready line is waited for as text) and no rate limits, unless a test asks for them.
      env: { ...process.env, ATH_HOME: join(home.path, "home"), NO_COLOR: "1", ...QUIET_LIMITS, ATH_LOG_FORMAT: "text", ...options.env },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
  }

  async function start(): Promise<void> {
    const p = spawn();
    proc = p;
    reading = [drain(p.stderr, (s) => (log += s))];
    const ready = await waitForLine(p.stdout, "listening on ", (s) => (log += s), (rest) => reading.push(rest));
    if (ready === undefined) {
      const code = await Promise.race([p.exited, Bun.sleep(200).then(() => undefined)]);
      p.kill("SIGKILL");
      throw new Error(`ath serve did not start (exit ${code ?? "?"}):\n${log}`);
    }
    // --log-format json: the ready line is a record whose msg is the text line
    const line = ready.trim().startsWith("{") ? String((JSON.parse(ready) as { msg?: unknown }).msg) : ready.trim();
    if (line !== `listening on ${baseUrl}`) throw new Error(`unexpected ready line: ${ready}`);
  }

  try {
    await start();
  } catch (err) {
    // a gateway that did not start leaves no temporary directory behind (a test of a refused start has nothing to clean)
    await proc?.exited;
    await home.remove();
    throw err;
  }
  return {
    baseUrl,
    port,
    dataDir,
    adminToken,
    providersFile,
    output: () => log,
    waitForOutput: (pattern) => eventually(`ath serve to print ${pattern}`, () => pattern.test(log)),
    pid: () => proc?.pid,
    async stop(signal = "SIGTERM") {
      const p = proc;
      if (p === undefined) return 0;
      p.kill(signal);
      proc = undefined;
      const code = await p.exited;
      await Promise.all(reading);
      return code;
    },
    async kill() {
      const p = proc;
      if (p === undefined) return;
      p.kill("SIGKILL");
      proc = undefined;
      await p.exited;
      await Promise.all(reading);
    },
    restart: start,
    async cleanup() {
      if (proc !== undefined) {
        proc.kill("SIGKILL");
        await proc.exited;
        proc = undefined;
      }
      await home.remove();
    },
  };
}

// internal

/** Reads `stream` until a line containing `marker` arrives (returned; the rest is read on, `rest` told) or the stream ends (undefined). */
async function waitForLine(stream: ReadableStream<Uint8Array>, marker: string, sink: (s: string) => void, rest: (reading: Promise<void>) => void): Promise<string | undefined> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return undefined;
    const text = decoder.decode(value, { stream: true });
    sink(text);
    buffer += text;
    const lines = buffer.split("\n");
    buffer = lines.pop() ?? "";
    const found = lines.find((l) => l.includes(marker));
    if (found !== undefined) {
      reader.releaseLock();
      rest(drain(stream, sink));
      return found;
    }
  }
}

async function drain(stream: ReadableStream<Uint8Array>, sink: (s: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      sink(decoder.decode(value, { stream: true }));
    }
  } catch {
    // the process was killed; nothing more to read
  }
}
