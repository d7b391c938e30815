/**
 * `ath templates [id]` — the built-in provider templates (DESIGN §11), without network: the list (id, name, quirks),
 * or one template filled in as a providers-file entry. Piped, `ath templates github > providers.json` writes a file
 * `ath serve --providers` takes once GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET are set.
 */
import type { ProviderTemplate } from "../../gateway/providers/templates/index.ts";
import { getDeps, type Deps } from "../kit/deps.ts";
import { usageError } from "../kit/errors.ts";
import { commonArgs, defineCommand, invocation } from "../kit/flags.ts";
import { output, type Format } from "../kit/render.ts";

export async function run(opts: { id?: string; format: Format }, deps: Deps): Promise<void> {
  // Imported here, not at the top: `ath --help` loads this module for its meta and must not load the gateway.
  const { exampleEntry, TEMPLATES } = await import("../../gateway/providers/templates/index.ts");
  const out = await output(opts.format, deps);
  if (opts.id === undefined) {
    const all = Object.values(TEMPLATES);
    if (out.json) return out.doc({ templates: all.map(summary) });
    const rows = all.map((t) => [t.id, t.entry.display_name, t.quirks.join("; ")]);
    out.table(out.tty ? [["TEMPLATE", "NAME", "QUIRKS"].map((h) => out.paint.bold(h)), ...rows] : rows);
    return;
  }
  const template = Object.hasOwn(TEMPLATES, opts.id) ? TEMPLATES[opts.id] : undefined;
  if (template === undefined) {
    throw usageError(`unknown template '${opts.id}' (known: ${Object.keys(TEMPLATES).join(", ")})`, { template: opts.id });
  }
  const entry = exampleEntry(template);
  if (out.json) return out.doc({ ...summary(template), entry });
  if (out.tty) {
    out.line(`${out.paint.bold(template.id)} — ${template.entry.display_name}`);
    for (const q of template.quirks) out.line(`  • ${q}`);
    for (const d of template.docs) out.line(`  ${out.paint.dim(d)}`);
    out.line();
    out.line(out.paint.dim(`# a providers file entry; set ${String(entry.client_id).slice(2, -1)} and ${String(entry.client_secret).slice(2, -1)}`));
  }
  // Raw JSON on stdout (not out.line, which would make the data a display cell): the piped output is a providers file.
  deps.stdout(`${JSON.stringify({ [template.id]: entry }, null, 2)}\n`);
}

export default defineCommand({
  meta: { name: "templates", description: "List the built-in provider templates, or print one as a providers entry" },
  args: {
    id: { type: "positional", required: false, description: "A template id (github, slack, …)" },
    format: commonArgs.format,
  },
  run: ({ args, data }) => run({ ...(typeof args.id === "string" && args.id !== "" ? { id: args.id } : {}), format: invocation(data).format }, getDeps()),
});

// internal

function summary(t: ProviderTemplate) {
  return { id: t.id, display_name: t.entry.display_name, quirks: t.quirks, docs: t.docs };
}
