/**
 * Preloaded by `bun test` (bunfig.toml) before any test file: what a test process shares across files is released
 * once, after the last file — `bun test` runs every file in one process and, unlike Node, emits no `exit` event at
 * its end, so a shared resource (the one Chromium: tests/helpers/chromium.ts) registers its release here.
 */
import { afterAll } from "bun:test";

const releases = new Set<() => Promise<unknown>>();

/** Runs `release` once after the last test file of this process. */
export function atProcessEnd(release: () => Promise<unknown>): void {
  releases.add(release);
}

// Outside `bun test` (a script importing a helper, e.g. scripts/mcp-transcript.ts) `afterAll` throws: there the
// helpers' users close what they open themselves, and nothing is registered.
try {
  afterAll(async () => {
    // a release that hangs must not hold the run's end: 5 s each, then the process exits and takes it along
    for (const release of [...releases]) await Promise.race([release().catch(() => {}), Bun.sleep(5_000)]);
    releases.clear();
  });
} catch (error) {
  if (!String(error).includes("outside of the test runner")) throw error;
}
