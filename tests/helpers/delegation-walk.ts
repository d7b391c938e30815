/**
 * The property walk of DESIGN §23's delegation, shared by the in-process, binary and two-instance tests: from a root
 * token, a seeded generator delegates at random — random parents (the newest more often, so chains grow deep), random
 * sub-agents, scope subsets (now and then a wider set), budget shares (now and then more than is left) — and makes
 * calls with random tokens, spreading requests over the instances given. A model of what each token may hold predicts
 * every answer: the refusal and its reason (too deep, widening, over budget), and for calls forwarded or 429; each new
 * token is checked against every ancestor (scopes ⊆, expiry ≤, a share whenever an ancestor has one).
 */
import { expect } from "bun:test";
import { call, type ClientCredentials, type HttpResult, type Net } from "./agent.ts";
import { attest, type TestAgent } from "./attestations.ts";

export interface Holder {
  agent: TestAgent;
  client: ClientCredentials;
}

/** A token in the model: what it may do, what it has used (calls and shares carved), where it came from. */
export interface Held {
  token: string;
  holder: Holder;
  scopes: string[];
  budget: number | null;
  depth: number;
  expiresIn: number;
  parent: Held | null;
  used: number;
  children: Held[];
}

export interface WalkWorld {
  /** The instances; each request goes to one of them at random. */
  nets: Net[];
  provider: string;
  /** Every scope a token may hold. */
  scopes: string[];
  /** A proxied request the scopes allow (they hold at least one). */
  request(scopes: string[]): { method: string; path: string; body?: string };
}

/** A root token of the model. */
export function rootHeld(holder: Holder, t: { access_token: string; effective_scopes: string[]; expires_in: number }): Held {
  return { token: t.access_token, holder, scopes: t.effective_scopes, budget: null, depth: 0, expiresIn: t.expires_in, parent: null, used: 0, children: [] };
}

/** POST /ath/token: `parent`'s holder exchanges its token for `to`'s. */
export async function delegateOver(net: Net, parent: Held, to: Holder, o: { scope?: string; budget?: number | string; actor?: string } = {}): Promise<HttpResult> {
  const tokenUrl = `${net.baseUrl}/ath/token`;
  return call(tokenUrl, {
    json: {
      grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
      ...parent.holder.client,
      agent_attestation: await attest(parent.holder.agent, tokenUrl),
      subject_token: parent.token,
      subject_token_type: "urn:ietf:params:oauth:token-type:access_token",
      actor_token: o.actor ?? (await attest(to.agent, tokenUrl)),
      actor_token_type: "urn:ietf:params:oauth:token-type:jwt",
      ...(o.scope === undefined ? {} : { scope: o.scope }),
      ...(o.budget === undefined ? {} : { budget: o.budget }),
    },
    fetch: net.fetch,
  });
}

/** A proxied call with `token` at `net`; its status. */
export async function callWith(world: WalkWorld, net: Net, h: Held): Promise<number> {
  const r = world.request(h.scopes);
  const res = await call(`${net.baseUrl}/ath/proxy/${world.provider}${r.path}`, {
    method: r.method,
    headers: { authorization: `Bearer ${h.token}`, "content-type": "application/json" },
    ...(r.body === undefined ? {} : { body: r.body }),
    fetch: net.fetch,
  });
  return res.status;
}

/**
 * Walks from `root` (walk's steps, seed after seed from `o.seed`) until the walks together hold more than `o.tokens`
 * tokens and reached `o.depth`: some seeds' walks saturate early (the last tokens too deep or their shares spent), and
 * a guard on the walks' reach must not fail by chance. Returns `root` and every token the walks made.
 */
export async function walkUntil(world: WalkWorld, root: Held, pool: Holder[], o: { seed: number; steps: number; tokens: number; depth?: number }): Promise<Held[]> {
  const all: Held[] = [root];
  for (let k = 0; ; k++) {
    all.push(...(await walk(world, root, pool, { seed: o.seed + k, steps: o.steps })).slice(1));
    if (all.length > o.tokens && Math.max(...all.map((h) => h.depth)) >= (o.depth ?? 0)) return all;
    if (k === 19) throw new Error(`20 walks from seed ${o.seed} held ${all.length} tokens`);
  }
}

/** Walks `steps` random steps from `root` with the sub-agents of `pool`; returns every token the walk holds. */
export async function walk(world: WalkWorld, root: Held, pool: Holder[], o: { seed: number; steps: number }): Promise<Held[]> {
  const { seed } = o;
  // mulberry32: a failure names its seed, and DELEGATION_SEED=… reruns it
  let state = seed;
  const rand = (n: number) => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
  const net = () => world.nets[rand(world.nets.length)]!;
  const all: Held[] = [root];
  for (let step = 0; step < o.steps; step++) {
    if (rand(5) === 0 && all.length > 1) {
      // a call with a random delegated token: forwarded only within its share
      const h = all[1 + rand(all.length - 1)]!;
      const status = await callWith(world, net(), h);
      const left = h.budget === null ? Infinity : h.budget - h.used;
      const forwarded = status >= 200 && status < 300;
      expect({ seed, step, forwarded, status: forwarded ? 0 : status }).toEqual({ seed, step, forwarded: left > 0, status: left > 0 ? 0 : 429 });
      if (forwarded) h.used++;
      continue;
    }
    const parent = all[Math.max(0, all.length - 1 - rand(Math.min(all.length, 4)))]!;
    const to = pool[rand(pool.length)]!;
    if (to === parent.holder) continue;
    const subset = parent.scopes.filter(() => rand(2) === 0);
    const widen = rand(6) === 0 && parent.scopes.length < world.scopes.length;
    const scopes = widen ? world.scopes : subset.length ? subset : parent.scopes;
    const remaining = parent.budget === null ? null : parent.budget - parent.used;
    const budget = parent.budget === null ? (rand(3) === 0 ? undefined : rand(8)) : rand((remaining ?? 0) + 3);
    const r = await delegateOver(net(), parent, to, { scope: scopes.join(" "), ...(budget === undefined ? {} : { budget }) });
    // the gateway's order of checks: depth, then scopes, then the share
    const why = parent.depth >= 3 ? "delegation_too_deep" : widen ? "scope_widening" : remaining !== null && (budget ?? 0) > remaining ? "budget_exceeded" : null;
    if (why) {
      expect({ seed, step, status: r.status, reason: (r.json.details as { reason?: string } | undefined)?.reason }).toEqual({ seed, step, status: 400, reason: why });
      continue;
    }
    expect({ seed, step, status: r.status, body: r.status === 200 ? null : r.text }).toEqual({ seed, step, status: 200, body: null });
    const child: Held = {
      token: String(r.json.access_token),
      holder: to,
      scopes: r.json.effective_scopes as string[],
      budget: (r.json.budget as number | null) ?? null,
      depth: parent.depth + 1,
      expiresIn: Number(r.json.expires_in),
      parent,
      used: 0,
      children: [],
    };
    for (let a: Held | null = parent; a; a = a.parent) {
      expect({ seed, step, scopes: child.scopes.filter((s) => !a!.scopes.includes(s)) }).toEqual({ seed, step, scopes: [] });
      expect(child.expiresIn).toBeLessThanOrEqual(a.expiresIn);
      if (a.budget !== null) expect(child.budget).not.toBeNull();
    }
    if (parent.budget !== null) {
      parent.used += child.budget!;
      expect(parent.used).toBeLessThanOrEqual(parent.budget);
    }
    parent.children.push(child);
    all.push(child);
  }
  for (const h of all.filter((h) => h.budget !== null)) expect(h.children.reduce((n, c) => n + (c.budget ?? 0), 0)).toBeLessThanOrEqual(h.budget!);
  return all;
}
