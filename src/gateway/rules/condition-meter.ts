/**
 * Bounded work for a condition over data the caller shapes (DESIGN §14 "bounded work per input"; issue 35, finding
 * 5): a body, query, header set or MCP `arguments` with tens of thousands of members costs each request O(members)
 * once — and then every read a `when` makes of it is counted. CEL's operations on a collection (`in`, `size`, `==`,
 * `exists`, `all`, `map`…) touch each member, so a comprehension whose predicate reads the whole collection again
 * (`items.all(x, x in items)`) is quadratic in what the caller sent; counted reads stop it at MAX_READS, failing the
 * evaluation — which fails closed (a deny or approve holds, an allow does not).
 *
 * Only *large* values are counted: a container with more than SMALL members, a string over LONG_STRING characters,
 * or a container holding one; such a container is handed to CEL behind a Proxy that counts each read. Everything
 * else — the usual request, a few dozen fields — goes to CEL as it is, at no cost. Which values are large is found
 * by one pass over the value, kept per object for the request's other rules.
 */

export class ConditionBudgetError extends Error {
  override readonly name = "ConditionBudgetError";
}

/**
 * Reads of large request data one evaluation may make: a few passes over the largest collection a body under
 * `--max-policy-body` holds in practice; spending it costs ≈ 20–60 ms here (scripts/bench/re2.ts prints it).
 */
export const MAX_READS = 250_000;
/** A container with at most this many members (and nothing large inside) is not counted. */
export const SMALL = 64;
/** A string longer than this is large: reading it costs 1 + its length / 64. */
export const LONG_STRING = 4096;

/** Runs one evaluation with a fresh budget of MAX_READS (evaluation is synchronous: one counter serves). */
export function withReadBudget<T>(fn: () => T): T {
  left = MAX_READS;
  return fn();
}

/** `v` as a condition may see it: itself when small, else a counting view (the same view for the same object). */
export function metered<T>(v: T): T {
  if (typeof v !== "object" || v === null || !isLarge(v)) return v;
  let view = views.get(v);
  if (view === undefined) views.set(v, (view = new Proxy(v, COUNTING)));
  return view as T;
}

// internal

let left = MAX_READS;

function spend(n: number): void {
  left -= n;
  if (left < 0) throw new ConditionBudgetError(`the condition reads the request's data more than ${MAX_READS} times: it is too large for this condition`);
}

const views = new WeakMap<object, object>();
const large = new WeakMap<object, boolean>();

const COUNTING: ProxyHandler<object> = {
  get(target, key, receiver) {
    spend(1);
    const v = Reflect.get(target, key, receiver);
    if (typeof v === "string") {
      if (v.length > LONG_STRING) spend(v.length >> 6);
      return v;
    }
    // a frozen target must hand out its own values (a Proxy invariant): not counted below it
    return typeof v === "object" && v !== null && !Object.isFrozen(target) ? metered(v) : v;
  },
  has(target, key) {
    spend(1);
    return Reflect.has(target, key);
  },
  ownKeys(target) {
    const keys = Reflect.ownKeys(target);
    spend(keys.length);
    return keys;
  },
  // free: asked once per key after ownKeys (already counted), or once per membership test (O(1))
};

/** Whether `root` is large (see above): one pass, children before parents, with an explicit stack (no recursion). */
function isLarge(root: object): boolean {
  const known = large.get(root);
  if (known !== undefined) return known;
  const stack: { o: object; done: boolean }[] = [{ o: root, done: false }];
  const open = new WeakSet<object>([root]); // (JSON has no cycles; a value built otherwise might)
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (large.has(top.o)) {
      stack.pop();
      continue;
    }
    const values = Array.isArray(top.o) ? top.o : Object.values(top.o);
    if (!top.done) {
      top.done = true;
      if (values.length > SMALL) {
        large.set(top.o, true); // large whatever is inside: its members are judged when read
        stack.pop();
        continue;
      }
      for (const v of values) {
        if (typeof v !== "object" || v === null || large.has(v) || open.has(v)) continue;
        open.add(v);
        stack.push({ o: v, done: false });
      }
      continue;
    }
    stack.pop();
    large.set(top.o, values.some((v) => (typeof v === "string" ? v.length > LONG_STRING : typeof v === "object" && v !== null && large.get(v) === true)));
  }
  return large.get(root)!;
}
