/**
 * A TCP forwarder on a loopback port to another address (PostgreSQL, for the fault tests): `cut()` closes the port
 * and every connection through it, as a database that went down; `restore()` listens on the same port again.
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import { freePort } from "./net.ts";

export interface TcpForwarder {
  port: number;
  /** Refuse new connections and reset the open ones. */
  cut(): Promise<void>;
  /** Forward again, on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startForwarder(to: { host: string; port: number }): Promise<TcpForwarder> {
  const port = await freePort();
  const open = new Set<Socket>();
  let server: Server | undefined;

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = createServer((client) => {
        const upstream = connect(to.port, to.host);
        open.add(client);
        open.add(upstream);
        const drop = () => {
          client.destroy();
          upstream.destroy();
          open.delete(client);
          open.delete(upstream);
        };
        client.on("error", drop).on("close", drop);
        upstream.on("error", drop).on("close", drop);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      s.once("error", reject);
      s.listen(port, "127.0.0.1", () => resolve());
      server = s;
    });
  const cut = async () => {
    const s = server;
    server = undefined;
    for (const socket of open) socket.resetAndDestroy();
    open.clear();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  await listen();
  return { port, cut, restore: listen, close: cut };
}
