/**
 * Which gateway or native service a command talks to: `-g <url|name>`, the configured default, or in native
 * mode `--service <url>`. Base URLs are normalised (no trailing slash, no query) so credentials key on one form.
 */
import type { ConfigFile } from "./home.ts";
import { notConfigured, usageError } from "./errors.ts";

export type Mode = "gateway" | "native";

export interface TargetOptions {
  gateway?: string;
  mode: Mode;
  service?: string;
}

/** Normalises an http(s) base URL: `http://gw:8787/` → `http://gw:8787`. Returns undefined if not one. */
export function normalizeBaseUrl(s: string): string | undefined {
  if (!URL.canParse(s)) return undefined;
  const u = new URL(s);
  if (u.protocol !== "http:" && u.protocol !== "https:") return undefined;
  return `${u.origin}${u.pathname.replace(/\/+$/, "")}`;
}

/** The base URL of the gateway (or native service) to use, or a usage/config error naming the fix. */
export function resolveBase(o: TargetOptions, config: ConfigFile): string {
  if (o.mode === "native") {
    if (o.service === undefined || o.service === "") {
      throw usageError("--mode native needs --service <url>, e.g. ath discover --mode native --service https://app.example");
    }
    const base = normalizeBaseUrl(o.service);
    if (base === undefined) throw usageError(`--service must be an http(s) URL, got "${o.service}"`);
    return base;
  }
  const wanted = o.gateway ?? config.default_gateway;
  if (wanted === undefined || wanted === "") {
    throw notConfigured("NO_GATEWAY", "no gateway configured", undefined, "pass -g <url>, or run `ath config set-gateway <name> <url>`");
  }
  return resolveGatewayName(wanted, config);
}

/** A saved gateway name or a URL → base URL. */
export function resolveGatewayName(wanted: string, config: ConfigFile): string {
  const named = config.gateways[wanted];
  if (named !== undefined) {
    const base = normalizeBaseUrl(named);
    if (base === undefined) throw notConfigured("BAD_CONFIG", `gateway "${wanted}" has an invalid URL in config.json: ${named}`);
    return base;
  }
  const base = normalizeBaseUrl(wanted);
  if (base !== undefined) return base;
  // A URL of another scheme is a bad value, not the name of a gateway to save.
  if (/^[A-Za-z][\w+.-]*:/.test(wanted) && URL.canParse(wanted)) throw usageError(`-g must be a saved gateway name or an http(s) URL, got "${wanted}"`);
  // `127.0.0.1:8787`, `gw.example.com`, `localhost:8787/`: a URL without its scheme, not the name of a gateway to save
  if (/^(localhost|[\w-]+(\.[\w-]+)+|\[[\da-fA-F:]+\])(:\d{1,5})?(\/\S*)?$/.test(wanted) || /^[\w-]+:\d{1,5}(\/\S*)?$/.test(wanted)) {
    throw notConfigured("UNKNOWN_GATEWAY", `unknown gateway "${wanted}": a URL needs its scheme — did you mean -g http://${wanted}? (or https://)`);
  }
  throw notConfigured(
    "UNKNOWN_GATEWAY",
    `unknown gateway "${wanted}": pass a URL, or save it with \`ath config set-gateway ${wanted} <url>\``,
  );
}
