/**
 * The proxy tests' two worlds (DESIGN §7): every rule the proxy enforces at `/ath/proxy/{provider_id}/…` in gateway
 * mode must hold at `/api/…` of a native-mode gateway fronting that one provider. A test is written once, in
 * gateway-mode URLs; in the native twin each provider is its own native gateway (same scripted provider behind all
 * of them), and `send`/`fetch` rewrite `/ath/proxy/{id}/{rest}` to `/api/{rest}` on provider `id`'s gateway.
 */
import { call } from "./agent.ts";
import { BASE, inProcessGateway, type InProcess, type InProcessOptions } from "./in-process.ts";
import { ScriptedProvider } from "./scripted-provider.ts";
import type { ProviderConfigInput } from "../../src/protocol/index.ts";

export const MODES = ["gateway", "native"] as const;
export type Mode = (typeof MODES)[number];

export interface Twins {
  mode: Mode;
  p: ScriptedProvider;
  /** The gateway serving `provider_id` (gateway mode: the one gateway). */
  at(provider_id: string): InProcess;
  /** `call` for a gateway-mode URL (absolute, or a path), sent where this world serves it. */
  send(url: string, init?: Parameters<typeof call>[1]): ReturnType<typeof call>;
  /** `fetch` for a gateway-mode path, sent where this world serves it. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

const PROXY = /^\/ath\/proxy\/([^/?]+)(.*)$/;

export async function proxyTwins(mode: Mode, providers: (p: ScriptedProvider) => Record<string, ProviderConfigInput>, o: InProcessOptions = {}): Promise<Twins> {
  const p = new ScriptedProvider();
  const configs = providers(p);
  const hosts = { [p.origin]: p.fetch, ...o.hosts };
  const gateways = new Map<string, InProcess>();
  if (mode === "gateway") {
    const g = await inProcessGateway({ ...o, providers: configs, hosts });
    for (const id of Object.keys(configs)) gateways.set(id, g);
  } else {
    for (const [id, config] of Object.entries(configs)) gateways.set(id, await inProcessGateway({ ...o, mode: "native", providers: { [id]: config }, hosts }));
  }
  const at = (id: string): InProcess => {
    const g = gateways.get(id);
    if (!g) throw new Error(`proxyTwins: no gateway serves ${id}`);
    return g;
  };
  /** [gateway, path on it] for a gateway-mode path. */
  const route = (path: string): [InProcess, string] => {
    const m = PROXY.exec(path);
    if (!m) throw new Error(`proxyTwins: not a proxy path: ${path}`);
    if (mode === "gateway") return [gateways.values().next().value!, path];
    return [at(m[1]!), `/api${m[2]}`];
  };
  return {
    mode,
    p,
    at,
    send: (url, init = {}) => {
      const [g, path] = route(url.startsWith(BASE) ? url.slice(BASE.length) : url);
      return call(BASE + path, { ...init, fetch: g.fetch });
    },
    fetch: (path, init) => {
      const [g, rewritten] = route(path);
      return g.fetch(rewritten, init);
    },
    close: async () => {
      for (const g of new Set(gateways.values())) await g.close();
    },
  };
}
