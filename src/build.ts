/**
 * What this build of `ath` is: the package version, the commit it was built from and the artifact's target
 * (`linux-x64`, `darwin-arm64`, `windows-x64`…). scripts/build.ts injects the commit and target with
 * `bun build --define`; run from source (`bun src/main.ts`) both read `source`. `ath --version` prints them.
 */
import pkg from "../package.json" with { type: "json" };

declare const ATH_BUILD_COMMIT: string | undefined;
declare const ATH_BUILD_TARGET: string | undefined;

export interface BuildInfo {
  version: string;
  commit: string;
  target: string;
}

export const BUILD: BuildInfo = {
  version: pkg.version,
  commit: typeof ATH_BUILD_COMMIT === "string" ? ATH_BUILD_COMMIT : "source",
  target: typeof ATH_BUILD_TARGET === "string" ? ATH_BUILD_TARGET : "source",
};

/** `ath --version`: `0.1.0 (commit 1a2b3c4d5e6f, linux-x64)`, or the JSON document `{version, commit, target}`. */
export function versionText(json: boolean): string {
  return json ? `${JSON.stringify(BUILD)}\n` : `${BUILD.version} (commit ${BUILD.commit}, ${BUILD.target})\n`;
}
