/**
 * Private files that survive parallel writers: atomic writes (temp file + rename, mode 0600) and an exclusive
 * lock file (O_EXCL) with a stale-lock timeout, so ten `ath` processes at once never lose an update.
 */
import { mkdir, open, readFile, rename, rm, stat, chmod } from "node:fs/promises";
import { dirname } from "node:path";

/** A lock older than this is left over from a crashed process and may be broken. */
export const STALE_LOCK_MS = 10_000;
/** How long a writer waits for the lock before giving up. */
export const LOCK_WAIT_MS = 15_000;

/** Creates `dir` (and parents) with mode 0700. */
export async function ensurePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
}

/** Reads a file, or returns undefined when it does not exist. */
export async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
}

/** Writes `data` to `path` atomically with mode 0600: readers see the old or the new file, never a part. */
export async function writeFileAtomic(path: string, data: string): Promise<void> {
  await ensurePrivateDir(dirname(path));
  const tmp = `${path}.${process.pid}.${Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString("hex")}.tmp`;
  const fh = await open(tmp, "wx", 0o600);
  try {
    await fh.writeFile(data, "utf8");
    await fh.sync();
  } finally {
    await fh.close();
  }
  await chmod(tmp, 0o600); // umask cannot widen 0600, but a pre-existing umask of 0o077+ must not matter either
  await rename(tmp, path);
}

/** Runs `fn` while holding `${path}.lock`; waits for other holders and breaks locks older than STALE_LOCK_MS. */
export async function withLock<T>(path: string, fn: () => Promise<T>, now: () => number = Date.now): Promise<T> {
  const lock = `${path}.lock`;
  await ensurePrivateDir(dirname(path));
  const deadline = now() + LOCK_WAIT_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      const fh = await open(lock, "wx", 0o600);
      await fh.writeFile(String(process.pid));
      await fh.close();
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      if (await isStale(lock, now())) {
        await rm(lock, { force: true });
        continue;
      }
      if (now() > deadline) throw new Error(`could not lock ${path}: ${lock} is held by another ath process`);
      await Bun.sleep(5 + Math.min(attempt, 10) * 3 + Math.floor(Math.random() * 10));
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lock, { force: true });
  }
}

// internal

async function isStale(lock: string, nowMs: number): Promise<boolean> {
  try {
    return nowMs - (await stat(lock)).mtimeMs > STALE_LOCK_MS;
  } catch {
    return false; // vanished meanwhile: just retry
  }
}
