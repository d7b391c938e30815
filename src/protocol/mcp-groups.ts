/**
 * One MCP URL for many servers (DESIGN §22): the providers file's `mcp_groups` — named groups of MCP providers served
 * together at `{base_url}/mcp/g/{group}` — and the naming rule of every federated URL (the plain `{base_url}/mcp`
 * too): a member's tools and prompts are its `prefix` + the upstream's name, its resources `ath+{provider}:` + the
 * upstream's URI (the URI itself when the prefix is empty).
 *
 * Names are known only when the upstreams answer, so "collisions refused at configuration" is decided on what is known
 * then: the members' prefixes. Two prefixes where one starts the other (`a_` and `a_b_`), or an empty prefix beside
 * another member, could give two tools one name; such a group is refused naming both members. Prefix-free prefixes
 * make every federated name route to exactly one member.
 */
import { z } from "zod";
import { ProviderId } from "./provider-config.ts";

/** What a prefix stands for before `{provider}` is filled in; the default one. */
export const DEFAULT_PREFIX = "{provider}_";

/** A group's name: a path segment of `/mcp/g/{group}`. */
export const GroupName = z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, "group names are 1–64 of a-z 0-9 _ . - (starting with a letter or digit)");

export const McpGroup = z
  .object({
    providers: z.array(ProviderId).min(1, "a group names at least one provider").max(64),
    // MCP tool names are A-Z a-z 0-9 _ - . (SEP-986): so is a prefix once `{provider}` is filled in
    prefix: z
      .string()
      .max(64)
      .regex(/^([A-Za-z0-9_.-]|\{provider\})*$/, "a prefix holds A-Z a-z 0-9 _ . - and {provider}")
      .default(DEFAULT_PREFIX),
  })
  .strict();
export type McpGroup = z.infer<typeof McpGroup>;

export const McpGroups = z.record(GroupName, McpGroup);
export type McpGroups = z.infer<typeof McpGroups>;

/** A member's prefix with `{provider}` filled in. */
export function expandPrefix(prefix: string, providerId: string): string {
  return prefix.replaceAll("{provider}", providerId);
}

/** The URI scheme a member's resources are namespaced under (unless the prefix is empty). */
export function resourceScheme(providerId: string): string {
  return `ath+${providerId}:`;
}

/**
 * Every problem of the groups against the providers (`mcpProviders`: the ids of providers with `mcp`), at its path:
 * unknown or non-MCP members, a member listed twice, prefixes that could collide (naming both members).
 */
export function groupProblems(groups: McpGroups, mcpProviders: readonly string[], known: readonly string[]): string[] {
  const problems: string[] = [];
  for (const [name, g] of Object.entries(groups)) {
    const at = `mcp_groups.${name}`;
    const seen = new Set<string>();
    g.providers.forEach((id, i) => {
      if (!known.includes(id)) problems.push(`${at}.providers.${i}: no provider ${id} in this file`);
      else if (!mcpProviders.includes(id)) problems.push(`${at}.providers.${i}: ${id} is no MCP server (its entry has no mcp.url)`);
      if (seen.has(id)) problems.push(`${at}.providers.${i}: ${id} is listed twice`);
      seen.add(id);
    });
    problems.push(...prefixClashes(g.providers.map((id) => ({ id, prefix: expandPrefix(g.prefix, id) }))).map((c) => `${at}.prefix: ${c}`));
  }
  return problems;
}

/** Pairs of members whose names could collide: one's prefix starts the other's (an empty prefix starts every one). */
export function prefixClashes(members: readonly { id: string; prefix: string }[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < members.length; i++) {
    for (let j = i + 1; j < members.length; j++) {
      const a = members[i]!;
      const b = members[j]!;
      if (a.id === b.id) continue;
      if (a.prefix.startsWith(b.prefix) || b.prefix.startsWith(a.prefix)) {
        out.push(`the names of ${a.id} (prefix "${a.prefix}") and ${b.id} (prefix "${b.prefix}") could collide`);
      }
    }
  }
  return out;
}
