/**
 * The one log writer (ops/log.ts, DESIGN §10): JSON lines or text at or above a level, and secrets kept out where
 * lines are written — by field name, and in every string by shape — whatever a call site hands it.
 */
import { describe, expect, test } from "bun:test";
import { createLogger, LineBatch } from "../../../../src/gateway/ops/log.ts";

function capture(format: "json" | "text", level: "debug" | "info" | "warn" | "error" = "debug") {
  const lines: string[] = [];
  const log = createLogger({ format, level, write: (l) => void lines.push(l), now: () => Date.UTC(2026, 10, 26, 6, 0, 0) });
  return { log, lines };
}

describe("log lines", () => {
  test("JSON: one object a line with time, level, msg and the fields", () => {
    const { log, lines } = capture("json");
    log.info("request", { request_id: "r1", status: 200 });
    expect(lines).toEqual(['{"time":"2026-11-26T06:00:00.000Z","level":"info","msg":"request","request_id":"r1","status":200}\n']);
  });

  test("text: time, level, message and key=value pairs, quoted when needed, on one line", () => {
    const { log, lines } = capture("text");
    log.warn("two\nlines", { route: "/ath/token", note: "has space" });
    expect(lines).toEqual(['2026-11-26T06:00:00.000Z WARN  two lines route=/ath/token note="has space"\n']);
  });

  test("lines below the level are not written; the start-up line is bare in text and a record in JSON", () => {
    const text = capture("text", "warn");
    text.log.info("request");
    text.log.debug("detail");
    text.log.announce("listening on http://127.0.0.1:8787");
    expect(text.lines).toEqual(["listening on http://127.0.0.1:8787\n"]);
    const json = capture("json", "error");
    json.log.announce("listening on http://127.0.0.1:8787");
    expect(JSON.parse(json.lines[0]!)).toEqual({ time: "2026-11-26T06:00:00.000Z", level: "info", msg: "listening on http://127.0.0.1:8787" });
  });
});

describe("the access record (the line of every request)", () => {
  const records = [
    { request_id: "r1", method: "GET", route: "/ath/proxy/{provider_id}/*", status: 200, duration_ms: 0.412, client_id: "ath_c1", provider_id: "gmail" },
    { request_id: "7c0e9a3e-5b1f-4f7e-9a55-0d8f3f0b6a11", method: "OTHER", route: "unmatched", status: 404, duration_ms: 0.05 },
    // a client may choose its request id: one that spells our token prefix is scrubbed like every string
    { request_id: "ath_tk_AAAAsecretlooking", method: "POST", route: "/ath/token", status: 400, duration_ms: 1, client_id: "ath_c1" },
  ];
  for (const format of ["json", "text"] as const) {
    test(`${format}: access() writes the line info("request", fields) writes`, () => {
      const fast = capture(format, "info");
      const general = capture(format, "info");
      for (const r of records) {
        fast.log.access(r);
        const fields: Record<string, unknown> = { ...r };
        for (const k of ["client_id", "provider_id"]) if (fields[k] === undefined) delete fields[k];
        general.log.info("request", fields as never);
      }
      expect(fast.lines).toEqual(general.lines);
      expect(fast.lines.join("")).not.toContain("secretlooking");
      expect(fast.lines).toHaveLength(3);
    });
  }

  test("stdout's batch writes the access line as bytes, byte for byte the line access() writes elsewhere", () => {
    const chunks: Uint8Array[] = [];
    const batch = new LineBatch((c) => void chunks.push(c.slice()));
    const expected: string[] = [];
    const ids = ["r1", "7c0e9a3e-5b1f-4f7e-9a55-0d8f3f0b6a11", "ath_tk_AAAAsecretlooking", "has\"quote", "back\\slash", "ünï", "Bearer-x", "x".repeat(129), ""];
    const durations = [0, 0.001, 0.05, 0.1, 0.412, 1, 1.5, 10.25, 999.999, 12345.678, 0.12345, 1e9, 2.5e9 + 0.5, -1, NaN, 7 / 3];
    let i = 0;
    for (const request_id of ids) {
      for (const duration_ms of durations) {
        i++;
        const time = Date.UTC(2026, 10, 29, 4, 0, 0) + Math.floor(i / 3);
        const r = {
          request_id,
          method: i % 4 === 0 ? "OTHER" : "GET",
          route: i % 5 === 0 ? "unmatched" : "/ath/proxy/{provider_id}/*",
          status: [200, 404, 502, 99, 1000, 200.5][i % 6]!,
          duration_ms,
          ...(i % 3 !== 0 ? { client_id: i % 2 ? "ath_c1" : 'odd"client' } : {}),
          ...(i % 7 !== 0 ? { provider_id: "gmail" } : {}),
        };
        const lines: string[] = [];
        createLogger({ format: "json", level: "info", write: (l) => void lines.push(l), now: () => time }).access(r);
        expected.push(...lines);
        batch.access(time, r);
        if (i % 40 === 0) batch.flush();
      }
    }
    batch.flush();
    const written = new TextDecoder().decode(Buffer.concat(chunks));
    expect(written).toBe(expected.join(""));
    expect(written.split("\n")).toHaveLength(ids.length * durations.length + 1);
    expect(written).not.toContain("secretlooking");
  });

  test("below the level, no access line", () => {
    const { log, lines } = capture("json", "warn");
    log.access(records[0]!);
    expect(lines).toEqual([]);
  });
});

describe("secrets never reach a line (DESIGN §10)", () => {
  const SECRET = "s3cr3t-value-0123456789";

  test("fields named like secrets are replaced whole, at any depth", () => {
    const { log, lines } = capture("json");
    const named = ["token", "access_token", "refreshToken", "client_secret", "code", "agent_code", "state", "cookie", "Set-Cookie", "authorization", "password", "code_verifier", "agent_attestation", "api_key", "master_key"];
    log.info("fields", Object.fromEntries(named.map((k) => [k, SECRET])));
    log.info("nested", { data: { inner: { access_token: SECRET }, list: [{ refresh_token: SECRET }] } });
    expect(lines.join("")).not.toContain(SECRET);
    expect(JSON.parse(lines[0]!).client_secret).toBe("[redacted]");
  });

  test("strings lose query strings, fragments, our secrets by prefix, bearer credentials and secret pairs", () => {
    const { log, lines } = capture("json");
    const leaks = [
      `GET https://api.example/v1?access_token=${SECRET}`,
      `/ath/callback?code=${SECRET}&state=x`,
      `https://app.example/cb#access_token=${SECRET}`,
      `ath_tk_${SECRET}`,
      `ath_secret_${SECRET}`,
      `ath_code_${SECRET}`,
      `ath_sess_${SECRET}`,
      `ath_admin_${SECRET}`,
      `Authorization: Bearer ${SECRET}`,
      `basic ${SECRET}`,
      `{"refresh_token":"${SECRET}"}`,
      `client_secret=${SECRET}&grant_type=refresh_token`,
      `cookie: ath_binding=${SECRET}`,
    ];
    for (const leak of leaks) log.warn(`upstream said: ${leak}`, { error: leak, detail: [leak] });
    log.error("internal error", new Error(`failed with ${leaks[0]}`));
    expect(lines).toHaveLength(leaks.length + 1);
    for (const line of lines) expect(line).not.toContain(SECRET);
  });

  test("what is not secret stays readable: client ids, routes, statuses, messages", () => {
    const { log, lines } = capture("json");
    log.info("request", { client_id: "ath_XXo6--WfAqvxyjepN179AA", route: "/ath/proxy/{provider_id}/*", status: 401, provider_id: "mail" });
    log.error("sweep failed", new TypeError("database is locked"));
    expect(JSON.parse(lines[0]!)).toMatchObject({ client_id: "ath_XXo6--WfAqvxyjepN179AA", route: "/ath/proxy/{provider_id}/*", status: 401, provider_id: "mail" });
    expect(JSON.parse(lines[1]!).error).toBe("TypeError: database is locked");
  });
});
