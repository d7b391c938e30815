/**
 * Built-in provider templates (DESIGN §11): data, one file per provider, each following that provider's published
 * OAuth documentation (cited in its comments and `docs`). An entry names one with `template`; the template fills
 * every field and the entry's own fields replace the template's, whole (no deep merge). The merged entry is then
 * validated like any other, so a wrong override fails naming the provider and the field.
 */
import type { ProviderConfigInput } from "../../../protocol/index.ts";
import { dropbox } from "./dropbox.ts";
import { github } from "./github.ts";
import { githubMcp } from "./github-mcp.ts";
import { gitlab } from "./gitlab.ts";
import { google } from "./google.ts";
import { linear } from "./linear.ts";
import { microsoft } from "./microsoft.ts";
import { notion } from "./notion.ts";
import { slack } from "./slack.ts";

export interface ProviderTemplate {
  id: string;
  /** The provider's documentation pages the template follows. */
  docs: string[];
  /** How this provider departs from RFC 6749, one line each (`ath templates`). */
  quirks: string[];
  /** Every field of a providers entry but the client credentials, which each operator brings. */
  entry: Omit<ProviderConfigInput, "client_id" | "client_secret" | "template">;
}

/** The templates by id, in id order. */
export const TEMPLATES: Readonly<Record<string, ProviderTemplate>> = Object.freeze({
  dropbox,
  github,
  "github-mcp": githubMcp,
  gitlab,
  google,
  linear,
  microsoft,
  notion,
  slack,
});

/** An entry's `template` names no built-in template. `field` is the entry field at fault, for the error's path. */
export class UnknownTemplateError extends Error {
  override readonly name = "UnknownTemplateError";
  readonly field = "template";
  readonly known = Object.keys(TEMPLATES);
  constructor(readonly template: string) {
    super(`unknown template '${template}' (known: ${Object.keys(TEMPLATES).join(", ")})`);
  }
}

/**
 * The entry with its template's fields filled in: `{...template.entry, ...entry}`. An entry without `template` (or
 * with a non-string one, which validation reports) comes back unchanged.
 * @example applyTemplate({ template: "github", client_id: "x", client_secret: "y" }).token_endpoint
 *   // "https://github.com/login/oauth/access_token"
 */
export function applyTemplate(entry: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const id = entry.template;
  if (typeof id !== "string") return { ...entry };
  const template = Object.hasOwn(TEMPLATES, id) ? TEMPLATES[id] : undefined;
  if (template === undefined) throw new UnknownTemplateError(id);
  return { ...structuredClone(template.entry), ...entry };
}

/** The entry an operator starts from: the template filled, with `${ID_CLIENT_ID}`-style credential references. */
export function exampleEntry(template: ProviderTemplate): Record<string, unknown> {
  const env = template.id.toUpperCase().replace(/[^A-Z0-9]/g, "_");
  const own = { template: template.id, client_id: `\${${env}_CLIENT_ID}`, client_secret: `\${${env}_CLIENT_SECRET}` };
  return { ...own, ...applyTemplate(own) };
}
