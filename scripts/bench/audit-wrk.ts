/**
 * DESIGN §20's bench: proxy throughput with the per-call audit against the same source without it, in one run. Builds
 * two binaries of this working tree — as it is, and a probe with the `proxy.call` record left out (the one call to
 * auditProxyCall in src/gateway/proxy/handler.ts skipped; everything else the same) — then measures both with
 * `scripts/bench/wrk.ts --ab`: wrk at 64 connections, the gateways pinned to one CPU, several processes of each build
 * (one process can be a few per cent faster than another of the same build for its whole life), every round measuring
 * each process once (order alternating) and its ratio taken within the round. Budget: ≥ 0.95× (median of the rounds'
 * ratios). Two copies of one build measured this way: 1.009× (GET), 1.015× (POST).
 *
 * Needs wrk and taskset (`apt-get install -y wrk util-linux`).
 * Usage: bun scripts/bench/audit-wrk.ts [--rounds 8] [--duration 3] [--instances 3]
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const REPO = resolve(import.meta.dir, "../..");
const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const rounds = flag("--rounds", "8");
const duration = flag("--duration", "3");
const instances = flag("--instances", "3");
const CALL = "  auditProxyCall(gw, token, {";

const dir = mkdtempSync(join(tmpdir(), "ath-audit-wrk-"));
try {
  // Both builds from copies made now, so neither is a stale dist/ath.
  for (const [name, probe] of [["audited", false], ["no-audit", true]] as const) {
    const tree = join(dir, name);
    for (const part of ["src", "scripts", "package.json", "tsconfig.json", "bunfig.toml"]) cpSync(join(REPO, part), join(tree, part), { recursive: true });
    symlinkSync(join(REPO, "node_modules"), join(tree, "node_modules"));
    if (probe) {
      const handler = join(tree, "src/gateway/proxy/handler.ts");
      const text = readFileSync(handler, "utf8");
      if (text.split(CALL).length !== 2) throw new Error(`the probe's edit does not apply: "${CALL.trim()}" is not in ${handler} exactly once`);
      writeFileSync(handler, text.replace(CALL, `  if (false) auditProxyCall(gw, token, {`));
    }
    const built = Bun.spawnSync([process.execPath, join(tree, "scripts/build.ts"), "--outfile", join(dir, `ath-${name}`)], {
      cwd: tree, env: { ...process.env, ATH_BUILD_COMMIT: name }, stdout: "ignore", stderr: "inherit",
    });
    if (built.exitCode !== 0) throw new Error(`building the ${name} binary failed`);
  }
  console.log(`A = this tree with the per-call audit, B = the same without the proxy.call record (${dir})`);
  const run = Bun.spawnSync(
    [process.execPath, join(REPO, "scripts/bench/wrk.ts"), "--ab", "--bin", join(dir, "ath-audited"), "--compare", join(dir, "ath-no-audit"), "--rounds", rounds, "--duration", duration, "--instances", instances],
    { stdout: "pipe", stderr: "inherit" },
  );
  const out = run.stdout.toString();
  process.stdout.write(out);
  if (run.exitCode !== 0) process.exit(run.exitCode ?? 1);
  const ratios = [...out.matchAll(/A ÷ B throughput, median of the rounds' ratios: ([\d.]+)×/g)].map((m) => Number(m[1]));
  console.log(`budget (DESIGN §20): ≥ 0.95× — ${ratios.map((r) => `${r.toFixed(3)}× ${r >= 0.95 ? "ok" : "MISS"}`).join(", ")} (GET, POST)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
