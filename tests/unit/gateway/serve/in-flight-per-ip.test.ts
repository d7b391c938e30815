/**
 * serve.ts's in-flight limit per peer address (DESIGN §14) reads each request's peer only when the total in flight
 * reaches the limit (issue 41: reading it costs a tenth of a bare hop's throughput) — and stays exact per address.
 */
import { describe, expect, test } from "bun:test";
import { inFlightPerIp } from "../../../../src/gateway/serve.ts";

function rig(max: number) {
  const addresses = new Map<Request, string>();
  let reads = 0;
  const limit = inFlightPerIp(max, (req) => {
    reads++;
    return addresses.get(req);
  });
  const pending: (() => void)[] = [];
  const send = (ip: string) => {
    const req = new Request("http://gw.test/health");
    addresses.set(req, ip);
    let finish!: () => void;
    // the handler says when it answered (the pipeline does, serve.ts)
    const refused = limit.admit(req);
    if (refused !== null) return { status: refused.status, done: Promise.resolve() };
    const answer = new Promise<Response>((resolve) => (finish = () => (limit.release(req), resolve(new Response("ok")))));
    pending.push(finish);
    return { status: 0, done: answer.then(() => undefined), finish };
  };
  return { send, reads: () => reads };
}

describe("in flight per address", () => {
  test("under the limit in all, no peer is read", async () => {
    const r = rig(3);
    const a = [r.send("10.0.0.1"), r.send("10.0.0.1"), r.send("10.0.0.1")];
    expect(a.map((x) => x.status)).toEqual([0, 0, 0]);
    expect(r.reads()).toBe(0);
    a.forEach((x) => x.finish!());
    await Promise.all(a.map((x) => x.done));
    expect(r.send("10.0.0.1").status).toBe(0);
    expect(r.reads()).toBe(0);
  });

  test("at the limit in all: the address with `max` in flight is refused (429), another address is admitted, and room comes back as answers go", async () => {
    const r = rig(3);
    const held = [r.send("10.0.0.1"), r.send("10.0.0.1"), r.send("10.0.0.1")];
    expect(r.send("10.0.0.1").status).toBe(429);
    expect(r.reads()).toBe(4); // the three in flight attributed at once, and the new one
    const other = r.send("10.0.0.2");
    expect(other.status).toBe(0);
    expect(r.send("10.0.0.2").status).toBe(0); // two from .2 while .1 holds three
    held[0]!.finish!();
    await held[0]!.done;
    expect(r.send("10.0.0.1").status).toBe(0); // .1 is at two again
    expect(r.send("10.0.0.1").status).toBe(429);
  });

  test("requests admitted unattributed are counted once attributed: two addresses sharing the limit", async () => {
    const r = rig(4);
    const a = [r.send("10.0.0.1"), r.send("10.0.0.2"), r.send("10.0.0.1"), r.send("10.0.0.2")];
    expect(r.reads()).toBe(0);
    // the total is 4: each address holds 2 of its 4
    expect(r.send("10.0.0.1").status).toBe(0);
    expect(r.send("10.0.0.1").status).toBe(0);
    expect(r.send("10.0.0.1").status).toBe(429);
    a.forEach((x) => x.finish!());
    await Promise.all(a.map((x) => x.done));
    expect(r.send("10.0.0.2").status).toBe(0);
  });
});
