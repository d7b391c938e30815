/** Address classes for the identity-document fetch (SSRF): only public unicast addresses may be fetched. */
import { describe, expect, test } from "bun:test";
import { classifyAddress } from "../../../../src/gateway/identity/ip-address.ts";

describe("identity — address classes", () => {
  test("private, loopback, link-local and reserved ranges are not public (IPv4 and IPv6)", () => {
    const table: Record<string, "public" | "loopback" | "private"> = {
      "127.0.0.1": "loopback", "127.255.0.9": "loopback", "::1": "loopback", "::ffff:127.0.0.1": "loopback",
      "0.0.0.0": "private", "10.0.0.1": "private", "100.64.0.1": "private", "169.254.169.254": "private",
      "172.16.0.1": "private", "172.31.255.255": "private", "192.168.0.1": "private", "192.0.2.1": "private",
      "198.18.0.1": "private", "224.0.0.1": "private", "255.255.255.255": "private",
      "::": "private", "fc00::1": "private", "fd12:3456::1": "private", "fe80::1": "private", "fe80::1%eth0": "private",
      "ff02::1": "private", "2001:db8::1": "private", "::ffff:10.0.0.1": "private", "::ffff:a9fe:a9fe": "private",
      "64:ff9b::a00:1": "private", "2002:0a00:0001::1": "private", "not-an-ip": "private",
      "93.184.216.34": "public", "8.8.8.8": "public", "172.32.0.1": "public", "100.128.0.1": "public",
      "2606:2800:220:1:248:1893:25c8:1946": "public", "::ffff:8.8.8.8": "public", "64:ff9b::808:808": "public",
    };
    for (const [ip, kind] of Object.entries(table)) expect([ip, classifyAddress(ip)]).toEqual([ip, kind]);
  });
});

describe("identity — addresses that embed another", () => {
  test("NAT64 local-use (64:ff9b:1::/48, RFC 8215) and IPv4-translated (::ffff:0:0/96) addresses embedding private IPv4 are not public", () => {
    expect(classifyAddress("64:ff9b:1::a00:1")).not.toBe("public"); // 10.0.0.1 through a local NAT64
    expect(classifyAddress("::ffff:0:a9fe:a9fe")).not.toBe("public"); // 169.254.169.254
  });
});
