/** Composing the upstream URL of a proxied request so it can never leave `api_base_url`. */
import { AthError } from "../../protocol/index.ts";

/**
 * Upstream URL = api_base_url + "/" + path + the original query string (DESIGN §3 "Proxy"). `rawPath` is the part
 * of the request-target after `/ath/proxy/{provider_id}/`, still percent-encoded. Refused (400 INVALID_REQUEST):
 * `.`/`..` segments, also percent-encoded (`%2e%2e`); encoded slashes or backslashes (`%2f`, `%5c`, `\`); empty
 * segments (`//host` would become a scheme-relative URL); NUL; malformed percent-encoding; and any result whose
 * origin or path prefix differs from api_base_url's.
 * @example upstreamUrl("https://api.example.com/v1", "messages/42", "?q=1") // "https://api.example.com/v1/messages/42?q=1"
 */
export function upstreamUrl(apiBaseUrl: string, rawPath: string, search: string): URL {
  const { origin, prefix } = parsedBase(apiBaseUrl);
  const segments = rawPath === "" ? [] : rawPath.split("/");
  segments.forEach((segment, i) => {
    // a trailing slash ("notes/") is kept: only inner empty segments are refused
    if (segment === "" && i === segments.length - 1 && i > 0) return;
    checkSegment(segment);
  });
  const target = new URL(origin + prefix + segments.join("/") + search);
  if (target.origin !== origin || !target.pathname.startsWith(prefix)) {
    throw traversal("the path leaves the provider's api_base_url");
  }
  return target;
}

// internal

/** api_base_url's origin and path prefix, parsed once per distinct value (it is parsed on every proxied request). */
function parsedBase(apiBaseUrl: string): { origin: string; prefix: string } {
  let parsed = bases.get(apiBaseUrl);
  if (parsed === undefined) {
    const base = new URL(apiBaseUrl);
    parsed = { origin: base.origin, prefix: base.pathname.endsWith("/") ? base.pathname : `${base.pathname}/` };
    if (bases.size >= 1_000) bases.clear();
    bases.set(apiBaseUrl, parsed);
  }
  return parsed;
}

const bases = new Map<string, { origin: string; prefix: string }>();

/**
 * A segment must not be, or become at the upstream, a dot segment or a separator. Upstreams differ in how far they
 * decode (some twice: `%252e%252e`) and some drop `;` parameters (Tomcat, Jetty, Spring read `..;` as `..`), so the
 * segment is decoded until it stops changing and judged with and without its parameters.
 */
function checkSegment(segment: string): void {
  if (segment === "") throw traversal("empty path segments are not allowed");
  let decoded = segment;
  for (let i = 0; i < 4; i++) {
    let next: string;
    try {
      next = decodeURIComponent(decoded);
    } catch {
      if (i === 0) throw traversal("malformed percent-encoding in the path");
      break;
    }
    if (next === decoded) break;
    decoded = next;
  }
  const beforeParams = decoded.split(";")[0] ?? "";
  if ([decoded, beforeParams].some((d) => d === "." || d === "..")) throw traversal("dot segments are not allowed in the path");
  if (/[/\\\0]/.test(decoded)) throw traversal("encoded slashes, backslashes and NUL are not allowed in the path");
}

function traversal(message: string): AthError {
  return new AthError("INVALID_REQUEST", `Invalid proxy path: ${message}`, { field: "path" });
}
