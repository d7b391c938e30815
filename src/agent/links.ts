/**
 * URLs a gateway hands the client to open, print as a link or elicit over MCP (consent pages, approval pages): only
 * `http(s)` URLs of that gateway's own origin are used (DESIGN §14); any other is refused with exit 4 / a tool error
 * naming its origin only (`scheme://host:port`), never the whole URL.
 */
import { originOf, sameOriginUrl } from "../text/sanitize.ts";
import { ClientError } from "./errors.ts";

/** `url` when it is an http(s) URL of `gateway`'s origin; else ClientError refused UNSAFE_URL. */
export function gatewayLink(url: string, gateway: string): string {
  const ok = sameOriginUrl(url, gateway);
  if (ok !== null) return ok;
  throw new ClientError("refused", "UNSAFE_URL", `the gateway sent a link to ${originOf(url)}, which is not its own origin (${originOf(gateway)}): it was not opened`);
}
