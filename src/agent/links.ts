/**
 * URLs a gateway hands the client to open, print as a link or elicit over MCP (consent pages, approval pages), by
 * DESIGN §14's rule (text/sanitize.ts `checkLink`): https to any origin — the protocol lets `authorization_url` point
 * at the provider, as the official SDK's gateway and native servers do — named first when it is not the gateway's;
 * http only to the gateway's origin or a loopback host. Any other is refused with exit 4 / a tool error naming its
 * origin only (`scheme://host:port`), never the whole URL.
 */
import { checkLink, originOf } from "../text/sanitize.ts";
import { ClientError } from "./errors.ts";

/** `url` when the link rule allows it; else ClientError refused UNSAFE_URL naming its origin and why. */
export function gatewayLink(url: string, gateway: string): string {
  const v = checkLink(url, gateway);
  if (v.ok) return v.href;
  throw new ClientError("refused", "UNSAFE_URL", `the gateway sent a link to ${originOf(url)}, which ath does not open: ${v.why}`);
}

/**
 * Where a link leaves the gateway, said before the link (`opens accounts.example.com`), or "" when it is the
 * gateway's own. `url` has passed `gatewayLink`.
 */
export function opensElsewhere(url: string, gateway: string): string {
  const v = checkLink(url, gateway);
  return v.ok && v.elsewhere !== null ? `opens ${v.elsewhere}` : "";
}
