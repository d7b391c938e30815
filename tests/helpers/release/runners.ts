/**
 * How the release tests run each Linux artifact on this x86-64 glibc machine: linux-x64 as is; linux-x64-musl under
 * musl's loader (Debian's `musl`) with Debian's libstdc++/libgcc_s lent through musl-shim.c (compiled with
 * musl-gcc from `musl-tools`); linux-arm64 under `qemu-aarch64-static` with the aarch64 glibc of
 * `libc6-arm64-cross`. .ci/run installs those packages.
 */
import { existsSync } from "node:fs";
import { mkdir, symlink } from "node:fs/promises";
import { join } from "node:path";

export interface Runner {
  /** argv prefix that runs `file`. */
  argv: (file: string) => string[];
  env: Record<string, string>;
}

const need = (path: string, pkg: string) => {
  if (!existsSync(path)) throw new Error(`${path} is missing: apt-get install ${pkg} (.ci/run does)`);
};

export function nativeRunner(): Runner {
  return { argv: (file) => [file], env: {} };
}

/** qemu-user cannot follow `ath serve`'s re-exec (execve of an aarch64 file without binfmt_misc): setting the
 * variables it re-executes itself for (BUN_CONFIG_MAX_HTTP_REQUESTS, MIMALLOC_PURGE_HOLES), as an operator may, skips it. */
export function qemuRunner(): Runner {
  need("/usr/bin/qemu-aarch64-static", "qemu-user-static");
  need("/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1", "libc6-arm64-cross");
  return { argv: (file) => ["/usr/bin/qemu-aarch64-static", "-L", "/usr/aarch64-linux-gnu", file], env: { BUN_CONFIG_MAX_HTTP_REQUESTS: "256", MIMALLOC_PURGE_HOLES: "0" } };
}

/** Builds the shim into `dir` (once) and runs the musl artifact with it on the library path. */
export async function muslRunner(dir: string): Promise<Runner> {
  need("/lib/ld-musl-x86_64.so.1", "musl");
  need("/usr/bin/musl-gcc", "musl-tools");
  const libs = ["/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib/x86_64-linux-gnu/libgcc_s.so.1"];
  for (const lib of libs) need(lib, "libstdc++6");
  await mkdir(dir, { recursive: true });
  const cc = Bun.spawnSync(["musl-gcc", "-shared", "-fPIC", "-O2", "-o", join(dir, "ld-linux-x86-64.so.2"), join(import.meta.dir, "musl-shim.c")], { stderr: "pipe" });
  if (cc.exitCode !== 0) throw new Error(`musl-gcc failed: ${cc.stderr.toString()}`);
  for (const lib of libs) await symlink(lib, join(dir, lib.split("/").pop()!));
  return { argv: (file) => [file], env: { LD_LIBRARY_PATH: dir } };
}

/** The magic bytes of an executable, read as `file` would: `elf x86-64 glibc`, `macho arm64`, `pe x86-64`… */
export function executableKind(bytes: Uint8Array): string {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes[0] === 0x7f && bytes[1] === 0x45 && bytes[2] === 0x4c && bytes[3] === 0x46) {
    if (bytes[4] !== 2 || bytes[5] !== 1) return "elf (not 64-bit little-endian)";
    const machine = { 0x3e: "x86-64", 0xb7: "aarch64" }[view.getUint16(0x12, true)] ?? "other";
    // the program interpreter (PT_INTERP) tells the C library: /lib/ld-musl-… or /lib64/ld-linux-…
    const phoff = Number(view.getBigUint64(0x20, true));
    const phentsize = view.getUint16(0x36, true);
    const phnum = view.getUint16(0x38, true);
    let interp = "";
    for (let i = 0; i < phnum; i++) {
      const at = phoff + i * phentsize;
      if (view.getUint32(at, true) !== 3) continue;
      const offset = Number(view.getBigUint64(at + 8, true));
      const size = Number(view.getBigUint64(at + 32, true));
      interp = new TextDecoder().decode(bytes.subarray(offset, offset + size)).replace(/\0+$/, "");
    }
    return `elf ${machine} ${interp.includes("ld-musl") ? "musl" : interp.includes("ld-linux") ? "glibc" : `interp=${interp}`}`;
  }
  if (view.getUint32(0, true) === 0xfeedfacf) {
    const cpu = { 0x01000007: "x86-64", 0x0100000c: "arm64" }[view.getUint32(4, true)] ?? "other";
    return `macho ${cpu}`;
  }
  if (bytes[0] === 0x4d && bytes[1] === 0x5a) {
    const pe = view.getUint32(0x3c, true);
    if (view.getUint32(pe, true) !== 0x00004550) return "mz (no PE header)";
    const machine = { 0x8664: "x86-64", 0xaa64: "arm64" }[view.getUint16(pe + 4, true)] ?? "other";
    return `pe ${machine}`;
  }
  return "unknown";
}
