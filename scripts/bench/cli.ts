/**
 * Cold-start benchmark of the compiled CLI: `dist/ath --version` and `dist/ath status --format json` (a temp
 * ATH_HOME with a key, a gateway and a registration) beside the bare start of the same binary
 * (`BUN_BE_BUN=1 dist/ath -e 0`: the runtime with nothing of ath loaded, DESIGN §13's baseline) and `node -e 0`,
 * measured in the same run, median of N runs each (default 25, `--runs N`), interleaved so machine noise hits every
 * command alike.
 * Usage: bun scripts/bench/cli.ts [--runs 25] [--bin dist/ath] [--compare OTHER_BIN]
 * --compare: another build's `status --format json` measured in the same interleaved runs (before/after a change).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? (args[i + 1] as string) : fallback;
};
const runs = Math.max(20, Number(flag("--runs", "25")));
const bin = flag("--bin", join(import.meta.dir, "..", "..", "dist", "ath"));
if (!(await Bun.file(bin).exists())) {
  console.error(`${bin} not found: build it first with \`npx bun run build\``);
  process.exit(1);
}

const home = await mkdtemp(join(tmpdir(), "ath-bench-"));
const env = { ...process.env, ATH_HOME: home, NO_COLOR: "1" };
try {
  // A realistic home: key, named gateway, one registration with a token.
  run([bin, "config", "init", "-g", "http://127.0.0.1:8787"]);
  const creds = {
    gateways: {
      "http://127.0.0.1:8787": {
        agents: {
          "did:key:zbench": {
            client_id: "ath_bench",
            client_secret: "ath_secret_bench",
            agent_status: "approved",
            approved_providers: [{ provider_id: "mail", approved_scopes: ["mail:read"], denied_scopes: [] }],
            approval_expires: "2099-01-01T00:00:00.000Z",
            registered_at: new Date().toISOString(),
            tokens: {},
            pending: {},
          },
        },
      },
    },
  };
  await Bun.write(join(home, "credentials.json"), JSON.stringify(creds));

  const commands: Record<string, string[]> = {
    "bare start (ath -e 0)": ["env", "BUN_BE_BUN=1", bin, "-e", "0"],
    "node -e 0": ["node", "-e", "0"],
    "ath --version": [bin, "--version"],
    "ath status --format json": [bin, "status", "--format", "json"],
  };
  const other = flag("--compare", "");
  if (other) commands["compared: status --format json"] = [other, "status", "--format", "json"];
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(commands).map((k) => [k, []]));
  for (const cmd of Object.values(commands)) run(cmd); // warm the page cache once
  for (let i = 0; i < runs; i++) {
    for (const [name, cmd] of Object.entries(commands)) samples[name]!.push(run(cmd));
  }
  const base = median(samples["bare start (ath -e 0)"]!);
  console.log(`cold starts, median of ${runs} runs (${bin}); budget: --version ≤ 1.3×, status ≤ 2× the bare start`);
  for (const [name, s] of Object.entries(samples)) {
    const m = median(s);
    console.log(`${name.padEnd(28)} ${m.toFixed(1).padStart(7)} ms   ${(m / base).toFixed(2)}× the bare start   (min ${Math.min(...s).toFixed(1)}, max ${Math.max(...s).toFixed(1)})`);
  }
} finally {
  await rm(home, { recursive: true, force: true });
}

function run(cmd: string[]): number {
  const t0 = performance.now();
  const p = Bun.spawnSync(cmd, { env, stdout: "pipe", stderr: "pipe" });
  const ms = performance.now() - t0;
  if (p.exitCode !== 0) throw new Error(`${cmd.join(" ")} exited ${p.exitCode}: ${p.stderr.toString()}`);
  return ms;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}
