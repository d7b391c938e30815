/**
 * Private files that survive parallel writers: atomic writes (temp file + rename, mode 0600) and an exclusive
 * lock file (O_EXCL) holding a random token, with a stale-lock timeout, so ten `ath` processes at once never lose
 * an update.
 */
import { readFileSync } from "node:fs";

/**
 * node:fs/promises (and node:path), loaded when a file is written or locked: `ath status` only reads, and loading
 * them is a few ms of every start (DESIGN §13).
 */
const fsp = () => import("node:fs/promises");
const dirname = async (path: string) => (await import("node:path")).dirname(path);

/** A lock older than this is left over from a crashed process and may be broken. */
export const STALE_LOCK_MS = 10_000;
/** How long a writer waits for the lock before giving up. */
const LOCK_WAIT_MS = 15_000;

/**
 * Creates `dir` (and parents) with mode 0700; an existing `dir` of ours that others can enter is tightened to
 * 0700 (it holds the secrets) — except the user's $HOME itself, which other programs may need open.
 */
export async function ensurePrivateDir(dir: string): Promise<void> {
  const { chmod, mkdir, stat } = await fsp();
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const st = await stat(dir);
  if ((st.mode & 0o077) !== 0 && st.uid === process.getuid?.() && dir.replace(/\/+$/, "") !== (process.env.HOME ?? "").replace(/\/+$/, "")) {
    await chmod(dir, 0o700).catch(() => undefined);
  }
}

/**
 * Reads a file (UTF-8, a leading BOM dropped), or returns undefined when it does not exist. The home's files are
 * small and read at every start: node:fs's readFileSync (node:fs is loaded by the CLI anyway, cli/kit/deps.ts) reads
 * the three `ath status` reads in ≈ 0.05 ms, where Bun.file().text() took ≈ 0.7 ms (a trip through the event loop).
 */
export async function readIfExists(path: string): Promise<string | undefined> {
  try {
    const text = readFileSync(path, "utf8");
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
}

/** Writes `data` to `path` atomically with mode 0600: readers see the old or the new file, never a part. */
export async function writeFileAtomic(path: string, data: string): Promise<void> {
  const { chmod, open, rename } = await fsp();
  await ensurePrivateDir(await dirname(path));
  const tmp = `${path}.${process.pid}.${randomHex()}.tmp`;
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

/**
 * Runs `fn` while holding `${path}.lock`; waits for other holders and breaks locks older than STALE_LOCK_MS.
 * The lock holds a random token: the holder removes it only while it still holds that token.
 */
export async function withLock<T>(path: string, fn: () => Promise<T>, now: () => number = Date.now): Promise<T> {
  const { open } = await fsp();
  const lock = `${path}.lock`;
  await ensurePrivateDir(await dirname(path));
  const token = `${process.pid}.${randomHex()}`;
  const deadline = now() + LOCK_WAIT_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      const fh = await open(lock, "wx", 0o600);
      try {
        await fh.writeFile(token);
      } finally {
        await fh.close();
      }
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      if (await isStale(lock, now())) {
        await breakStale(lock, now);
        continue;
      }
      if (now() > deadline) throw new Error(`could not lock ${path}: ${lock} is held by another ath process`);
      await Bun.sleep(5 + Math.min(attempt, 10) * 3 + Math.floor(Math.random() * 10));
    }
  }
  try {
    return await fn();
  } finally {
    await release(lock, token);
  }
}

// internal

async function isStale(lock: string, nowMs: number): Promise<boolean> {
  const { stat } = await fsp();
  try {
    return nowMs - (await stat(lock)).mtimeMs > STALE_LOCK_MS;
  } catch {
    return false; // vanished meanwhile: just retry
  }
}

/**
 * Removes a stale lock so that of many waiters who saw it stale, only one removes it: removing happens under
 * `${lock}.break` (O_EXCL), and staleness is checked again there — a waiter that comes late finds the fresh lock
 * of whoever got in meanwhile and leaves it. A `.break` file left by a crash is itself broken once stale.
 */
async function breakStale(lock: string, now: () => number): Promise<void> {
  const { open, rename, rm } = await fsp();
  const guard = `${lock}.break`;
  try {
    await (await open(guard, "wx", 0o600)).close();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    if (await isStale(guard, now())) await rm(guard, { force: true });
    return; // another waiter is breaking it: retry the lock
  }
  try {
    if (await isStale(lock, now())) {
      // Moved aside first: rename is atomic, so exactly this (stale) file goes, never a successor's.
      const aside = `${lock}.${randomHex()}.stale`;
      await rename(lock, aside).then(() => rm(aside, { force: true }), () => undefined);
    }
  } finally {
    await rm(guard, { force: true });
  }
}

/** Removes the lock if it still holds `token` (a holder that outlived STALE_LOCK_MS may have lost it). */
async function release(lock: string, token: string): Promise<void> {
  const { link, readFile, rename, rm, unlink } = await fsp();
  const aside = `${lock}.${randomHex()}.release`;
  try {
    await rename(lock, aside);
  } catch {
    return; // gone: broken as stale
  }
  if ((await readFile(aside, "utf8").catch(() => "")) === token) {
    await rm(aside, { force: true });
    return;
  }
  // Another process's lock: put it back unless someone locked meanwhile (link fails rather than replace).
  await link(aside, lock).catch(() => undefined);
  await unlink(aside).catch(() => undefined);
}

function randomHex(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString("hex");
}
