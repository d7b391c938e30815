/** `ath discover`: fetch the gateway catalog (/.well-known/ath.json) or, in native mode, /.well-known/ath-app.json. */
import { discover } from "../../agent/flows/discover.ts";
import { commonOptions, context, type CommonOptions } from "../kit/common.ts";
import { commonArgs, defineCommand } from "../kit/flags.ts";
import { getDeps, type Deps } from "../kit/deps.ts";
import { oneLine } from "../kit/errors.ts";

export async function run(opts: CommonOptions, deps: Deps): Promise<void> {
  const ctx = await context(opts, deps);
  const { base } = ctx.target();
  const { out } = ctx;
  const found = await discover(ctx.target(), ctx.agent);
  if (found.native) {
    const { doc } = found;
    if (out.json) return out.doc(doc);
    out.table([
      ["app_id", doc.app_id],
      ["name", doc.name],
      ["ath_version", doc.ath_version],
      ["api_base", doc.api_base],
      ["scopes", doc.auth.scopes_supported.join(",")],
    ]);
    return;
  }
  const { doc } = found;
  if (out.json) return out.doc(doc);
  // one line whatever the gateway's strings hold (painted ones are made one line by the paint itself)
  if (out.tty) out.line(`${out.paint.bold(doc.gateway_id)} (ATH ${oneLine(doc.ath_version)}) at ${base}`);
  const rows = doc.supported_providers.map((p) => [p.provider_id, p.display_name, p.available_scopes.join(",")]);
  out.table(out.tty ? [["PROVIDER", "NAME", "SCOPES"].map((h) => out.paint.bold(h)), ...rows] : rows);
}

export default defineCommand({
  meta: { name: "discover", description: "Fetch the discovery document (providers and their scopes)" },
  args: { ...commonArgs },
  run: ({ data }) => run(commonOptions(data), getDeps()),
});
