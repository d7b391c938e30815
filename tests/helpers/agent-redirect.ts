/**
 * The agent's end of the browser flow: a loopback HTTP server standing for the agent's redirect URI. It records
 * each redirect's query (code, state, ath_session_id or error) and shows the browser a plain page.
 */

/** Registered at the gateway: loopback redirect URIs match on any port (RFC 8252 §7.3). */
export const REGISTERED_REDIRECT = "http://127.0.0.1/agent/callback";

export interface AgentRedirect {
  /** The URI to send as user_redirect_uri (with this server's port). */
  uri: string;
  /** Every query received, oldest first. */
  received: URLSearchParams[];
  stop(): void;
}

export function startAgentRedirect(): AgentRedirect {
  const received: URLSearchParams[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const url = new URL(req.url);
      if (url.pathname !== "/agent/callback") return new Response("not found", { status: 404 });
      received.push(url.searchParams);
      return new Response("<!doctype html><title>agent</title><p>The agent received the answer.</p>", {
        headers: { "content-type": "text/html; charset=utf-8" },
      });
    },
  });
  return { uri: `http://127.0.0.1:${server.port}/agent/callback`, received, stop: () => void server.stop(true) };
}
