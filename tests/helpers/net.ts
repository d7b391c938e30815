/** Loopback networking helpers for the e2e harness: free ports and temporary directories. */
import { createServer } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Asks the kernel for a free TCP port on 127.0.0.1 (bound and released at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      if (address === null || typeof address === "string") {
        server.close();
        reject(new TypeError("no port assigned"));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}

/** A fresh directory under the OS temp dir; `remove()` deletes it and everything in it. */
export async function tempDir(prefix: string): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), `ath-e2e-${prefix}-`));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/** A random printable string of `bytes` random bytes (base64url), for secrets, states and ids. */
export function randomString(bytes = 24): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("base64url");
}
