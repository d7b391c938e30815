/**
 * A TCP forwarder on a loopback port to another address (PostgreSQL, for the fault tests and scripts/instances.ts),
 * which plays the ways a database goes away (DESIGN §24):
 * - `cut()` / `fault("refuse")`: the port is closed and every connection through it reset — a database that is down;
 * - `fault("reset")`: new connections are accepted, then reset at once, and the open ones reset — a partition or a
 *   firewall answering with RST;
 * - `fault("stall")`: new connections are accepted and never answered, and the open ones stop carrying bytes either
 *   way — a partition that drops packets, a half-open connection;
 * `restore()` forwards again on the same port. A connection that was open during a stall stays a black hole for good
 * (half-open: its bytes are dropped, nothing closes it), so the client must notice and drop it itself.
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import { freePort } from "./net.ts";

export type ForwarderFault = "refuse" | "reset" | "stall";

export interface TcpForwarder {
  port: number;
  /** The fault being played, or null while forwarding. */
  readonly fault: ForwarderFault | null;
  /** Refuse new connections and reset the open ones (fault "refuse"). */
  cut(): Promise<void>;
  /** Start playing a fault (see the module comment). */
  setFault(fault: ForwarderFault): Promise<void>;
  /** Forward again, on the same port. */
  restore(): Promise<void>;
  /** The local ports of the forwarder's connections to the target (PostgreSQL's `client_port` for them). */
  targetPorts(): number[];
  close(): Promise<void>;
}

export async function startForwarder(to: { host: string; port: number }, o: { port?: number } = {}): Promise<TcpForwarder> {
  const port = o.port ?? (await freePort());
  const open = new Set<Socket>();
  const toTarget = new Set<Socket>();
  /** Connections a stall caught: never carry a byte again. */
  const holes = new WeakSet<Socket>();
  let server: Server | undefined;
  let fault: ForwarderFault | null = null;

  const onConnection = (client: Socket) => {
    open.add(client);
    client.on("error", () => undefined).on("close", () => open.delete(client));
    if (fault === "reset") return void client.resetAndDestroy();
    if (fault === "stall") return void holes.add(client); // accepted, never answered
    const upstream = connect(to.port, to.host);
    open.add(upstream);
    toTarget.add(upstream);
    upstream.on("close", () => toTarget.delete(upstream));
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    // Bytes pass only while no fault is played: a stall holds them (a dropped packet is never delivered).
    const passes = () => fault === null && !holes.has(client);
    client.on("data", (chunk) => void (passes() && upstream.write(chunk)));
    upstream.on("data", (chunk) => void (passes() && client.write(chunk)));
  };
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = createServer(onConnection);
      s.once("error", reject);
      s.listen(port, "127.0.0.1", () => resolve());
      server = s;
    });
  const resetAll = () => {
    for (const socket of open) socket.resetAndDestroy();
    open.clear();
  };
  const closeServer = async () => {
    const s = server;
    server = undefined;
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  const setFault = async (f: ForwarderFault) => {
    fault = f;
    if (f === "refuse") {
      resetAll();
      await closeServer();
      return;
    }
    if (f === "reset") resetAll();
    if (f === "stall") for (const socket of open) holes.add(socket);
    if (server === undefined) await listen();
  };
  const restore = async () => {
    fault = null;
    if (server === undefined) await listen();
  };
  await listen();
  return {
    port,
    get fault() {
      return fault;
    },
    cut: () => setFault("refuse"),
    setFault,
    restore,
    targetPorts: () => [...toTarget].map((s) => s.localPort).filter((p): p is number => p !== undefined),
    close: async () => {
      fault = "refuse";
      resetAll();
      await closeServer();
    },
  };
}
