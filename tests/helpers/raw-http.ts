/**
 * HTTP/1.1 over a bare TCP socket (node:net), for request-targets that `fetch` would normalise before sending:
 * `/ath/proxy/p/..%2f..%2fadmin`, `/ath/proxy/p/a/../../x`, `//host/x`. Reads the whole response (Connection:
 * close) and decodes chunked bodies.
 */
import { connect } from "node:net";

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The body bytes exactly as received (after de-chunking). */
  bytes: Buffer;
}

/**
 * Sends `METHOD target HTTP/1.1` to 127.0.0.1:`port` verbatim, with the given headers (after its own `Host`);
 * `from` is the local address to send from (any 127.x.y.z on Linux loopback: another client IP).
 */
export function rawRequest(
  port: number,
  method: string,
  target: string,
  headers: Record<string, string> = {},
  body = "",
  from?: string,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: "127.0.0.1", ...(from ? { localAddress: from } : {}) });
    const chunks: Buffer[] = [];
    socket.on("connect", () => {
      const lines = [`${method} ${target} HTTP/1.1`, `Host: 127.0.0.1:${port}`, "Connection: close"];
      for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
      if (body !== "") lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
      socket.write(`${lines.join("\r\n")}\r\n\r\n${body}`);
    });
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", reject);
    socket.on("end", () => {
      try {
        resolve(parse(Buffer.concat(chunks)));
      } catch (error) {
        reject(error);
      }
    });
  });
}

// internal

function parse(raw: Buffer): RawResponse {
  const split = raw.indexOf("\r\n\r\n");
  if (split < 0) throw new Error(`incomplete HTTP response: ${raw.toString("latin1").slice(0, 200)}`);
  const [statusLine = "", ...headerLines] = raw.subarray(0, split).toString("latin1").split("\r\n");
  const status = Number(statusLine.split(" ")[1]);
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const i = line.indexOf(":");
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  let body = raw.subarray(split + 4);
  if ((headers["transfer-encoding"] ?? "").toLowerCase().includes("chunked")) body = dechunk(body);
  return { status, headers, body: body.toString("utf8"), bytes: body };
}

function dechunk(data: Buffer): Buffer {
  const out: Buffer[] = [];
  let pos = 0;
  for (;;) {
    const eol = data.indexOf("\r\n", pos);
    if (eol < 0) break;
    const size = Number.parseInt(data.subarray(pos, eol).toString("latin1"), 16);
    if (!Number.isFinite(size) || size === 0) break;
    out.push(data.subarray(eol + 2, eol + 2 + size));
    pos = eol + 2 + size + 2;
  }
  return Buffer.concat(out);
}
