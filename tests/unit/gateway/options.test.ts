/** The serve flags of issue 15 (DESIGN §10): logs, metrics and limits, each with its ATH_* variable and its rule. */
import { describe, expect, test } from "bun:test";
import { OptionsError, resolveServeOptions } from "../../../src/gateway/options.ts";

const ENV = { ATH_HOME: "/tmp/ath-options-test" };

describe("ath serve — observability and limit flags", () => {
  test("defaults: JSON logs unless stdout is a terminal, level info, metrics behind a token, 64 KiB and 32 MiB bodies", () => {
    const o = resolveServeOptions({}, ENV);
    expect(o.logFormat).toBe(process.stdout.isTTY ? "text" : "json");
    expect({ logLevel: o.logLevel, metricsPublic: o.metricsPublic, metricsToken: o.metricsToken, maxBody: o.maxBody, maxProxyBody: o.maxProxyBody }).toEqual({
      logLevel: "info",
      metricsPublic: false,
      metricsToken: undefined,
      maxBody: 65536,
      maxProxyBody: 32 * 1024 * 1024,
    });
  });

  test("flags win over ATH_* variables", () => {
    const o = resolveServeOptions(
      { "log-format": "text", "max-body": "2048", "metrics-public": true },
      { ...ENV, ATH_LOG_FORMAT: "json", ATH_LOG_LEVEL: "warn", ATH_METRICS_TOKEN: "m-token-of-24-characters", ATH_MAX_BODY: "4096", ATH_MAX_PROXY_BODY: "1048576" },
    );
    expect({ format: o.logFormat, level: o.logLevel, token: o.metricsToken, pub: o.metricsPublic, maxBody: o.maxBody, maxProxyBody: o.maxProxyBody }).toEqual({
      format: "text",
      level: "warn",
      token: "m-token-of-24-characters",
      pub: true,
      maxBody: 2048,
      maxProxyBody: 1048576,
    });
  });

  test("invalid values are refused all at once, each naming its flag", () => {
    const err = (() => {
      try {
        resolveServeOptions({ "log-format": "xml", "log-level": "loud", "max-body": "12", "max-proxy-body": "lots", "rate-limit-proxy": "5/d" }, ENV);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(OptionsError);
    const message = (err as Error).message;
    for (const flag of ["--log-format", "--log-level", "--max-body", "--max-proxy-body", "--rate-limit-proxy"]) expect(message).toContain(flag);
  });
});

describe("ath serve — --mcp-allowed-origins (DESIGN §21)", () => {
  test("a comma-separated list of http(s) origins, kept serialized; none by default; the environment variable works too", () => {
    expect(resolveServeOptions({}, ENV).mcpAllowedOrigins).toEqual([]);
    expect(resolveServeOptions({ "mcp-allowed-origins": "https://app.example, http://localhost:3000/" }, ENV).mcpAllowedOrigins).toEqual(["https://app.example", "http://localhost:3000"]);
    expect(resolveServeOptions({}, { ...ENV, ATH_MCP_ALLOWED_ORIGINS: "https://a.example" }).mcpAllowedOrigins).toEqual(["https://a.example"]);
  });

  test("anything that is not an origin is refused, naming the flag", () => {
    for (const bad of ["app.example", "https://app.example/path", "ftp://x.example", "https://"]) {
      expect(() => resolveServeOptions({ "mcp-allowed-origins": bad }, ENV)).toThrow(/--mcp-allowed-origins must list origins/);
    }
  });
});
