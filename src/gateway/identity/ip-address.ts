/** IP address classes for outbound fetches of agent identity documents: public, loopback, or private (refused). */
import { isIP } from "node:net";

/**
 * Whether an IP address may be fetched: "public", "loopback" (allowed in dev), or "private" for every
 * private, link-local, shared, reserved, multicast or documentation range (and anything unparseable).
 */
export function classifyAddress(ip: string): "public" | "loopback" | "private" {
  const host = ip.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (isIP(host) === 4) return classifyV4(host.split(".").map(Number));
  if (isIP(host) !== 6) return "private";
  const g = parseV6(host);
  if (g === undefined) return "private";
  const zeros = (n: number) => g.slice(0, n).every((x) => x === 0);
  const v4At = (i: number) => [g[i]! >> 8, g[i]! & 0xff, g[i + 1]! >> 8, g[i + 1]! & 0xff];
  if (zeros(7) && g[7] === 1) return "loopback"; // ::1
  if (zeros(5) && g[5] === 0xffff) return classifyV4(v4At(6)); // ::ffff:a.b.c.d (IPv4-mapped)
  if (zeros(4) && g[4] === 0xffff && g[5] === 0) return classifyV4(v4At(6)); // ::ffff:0:a.b.c.d (IPv4-translated, RFC 2765)
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return "private"; // 64:ff9b:1::/48 local-use NAT64 (RFC 8215)
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return classifyV4(v4At(6)); // 64:ff9b::/96 NAT64
  if (g[0] === 0x2002) return classifyV4(v4At(1)); // 6to4
  const first = g[0]!;
  if (
    zeros(6) || // ::, ::a.b.c.d (IPv4-compatible, deprecated)
    (first & 0xfe00) === 0xfc00 || // fc00::/7 unique local
    (first & 0xffc0) === 0xfe80 || // fe80::/10 link-local
    (first & 0xffc0) === 0xfec0 || // fec0::/10 site-local (deprecated)
    (first & 0xff00) === 0xff00 || // ff00::/8 multicast
    (first === 0x2001 && g[1] === 0x0db8) || // 2001:db8::/32 documentation
    (first === 0x2001 && g[1] === 0) || // 2001::/32 Teredo (embeds an obfuscated IPv4)
    (first === 0x0100 && g.slice(1, 4).every((x) => x === 0)) // 100::/64 discard
  ) {
    return "private";
  }
  return "public";
}

// internal

function classifyV4(o: number[]): "public" | "loopback" | "private" {
  const [a = 0, b = 0, c = 0] = o;
  if (a === 127) return "loopback";
  const isPrivate =
    a === 0 || a === 10 || a >= 224 || // this network, private, multicast + reserved + broadcast
    (a === 100 && b >= 64 && b <= 127) || // shared address space (CGNAT)
    (a === 169 && b === 254) || // link-local (cloud metadata)
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0 && (c === 0 || c === 2)) || // IETF protocol assignments, TEST-NET-1
    (a === 198 && (b === 18 || b === 19)) || // benchmarking
    (a === 198 && b === 51 && c === 100) || // TEST-NET-2
    (a === 203 && b === 0 && c === 113); // TEST-NET-3
  return isPrivate ? "private" : "public";
}

/** Eight 16-bit groups of an IPv6 address (handles `::` and a dotted IPv4 tail). */
function parseV6(ip: string): number[] | undefined {
  let text = ip;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) {
    const [a = 0, b = 0, c = 0, d = 0] = dotted[1].split(".").map(Number);
    text = text.slice(0, -dotted[1].length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(":") : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const fill = halves.length === 2 ? 8 - head.length - tail.length : 0;
  const groups = [...head, ...Array<string>(Math.max(fill, 0)).fill("0"), ...tail].map((h) => parseInt(h, 16));
  return groups.length === 8 && groups.every((n) => n >= 0 && n <= 0xffff) ? groups : undefined;
}
