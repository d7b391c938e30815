/** text/file-errors.ts: why a file could not be read, in words — never the library's errno code when there are words for it. */
import { describe, expect, test } from "bun:test";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileProblem } from "../../../src/text/file-errors.ts";

describe("a file error in words", () => {
  test("missing, a directory, a path through a file: said as such, from the errors node:fs really throws", async () => {
    const dir = await mkdtemp(join(tmpdir(), "ath-file-errors-"));
    try {
      const why = (path: string) => readFile(path, "utf8").then(() => "read", fileProblem);
      expect(await why(join(dir, "nope.json"))).toBe("no such file");
      expect(await why(dir)).toBe("it is a directory, not a file");
      await Bun.write(join(dir, "f"), "x");
      expect(await why(join(dir, "f", "below"))).toBe("a part of its path is not a directory");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("an unknown code is shown as it is; an error without a code by its message", () => {
    expect(fileProblem(Object.assign(new Error("x"), { code: "EWEIRD" }))).toBe("EWEIRD");
    expect(fileProblem(new Error("the disk is on fire"))).toBe("the disk is on fire");
    expect(fileProblem("plain")).toBe("plain");
  });
});
