/**
 * What a person does in Chromium: open the agent's authorization link, read the gateway's consent page, press
 * Approve or Deny, then answer the provider's own page — oidc-provider's form (Approve/Deny), the sandbox's
 * sign-in page (Allow/Cancel) or a provider mock's page (Authorize/Cancel, tests/helpers/providers/). Every step is a real click on a real button.
 */
import type { Page, Response } from "playwright-core";

export type Choice = "approve" | "deny";

export interface ConsentSteps {
  /** Button on the gateway's consent page (default approve). */
  gateway?: Choice;
  /** Button on the provider's page after an approval at the gateway (default approve). */
  provider?: Choice;
}

/** Clicks the button labelled `label` and waits until the navigation it starts (redirects included) has loaded. */
export async function clickAndWait(page: Page, label: string): Promise<Response | null> {
  const [response] = await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: label, exact: true }).click()]);
  return response;
}

/** The label of the provider page's button for `choice`, telling oidc-provider's page from the sandbox's. */
export function providerButton(page: Page, choice: Choice): string {
  const path = new URL(page.url()).pathname;
  if (path.startsWith("/interaction/")) return choice === "approve" ? "Approve" : "Deny";
  if (path.startsWith("/demo/")) return choice === "approve" ? "Allow" : "Cancel";
  if (path.startsWith("/__mock/consent/")) return choice === "approve" ? "Authorize" : "Cancel";
  throw new Error(`not on a provider's sign-in page: ${page.url()}`);
}

/** Opens `authorizationUrl` and checks it is the gateway's consent page. */
export async function openConsent(page: Page, authorizationUrl: string): Promise<Response | null> {
  const response = await page.goto(authorizationUrl);
  if (!new URL(page.url()).pathname.startsWith("/ath/consent/")) throw new Error(`expected the consent page, got ${page.url()}`);
  return response;
}

/** The whole of the person's part; returns the response of the last page loaded (result, denied, or the agent's). */
export async function consentInChromium(page: Page, authorizationUrl: string, steps: ConsentSteps = {}): Promise<Response | null> {
  await openConsent(page, authorizationUrl);
  if ((steps.gateway ?? "approve") === "deny") return clickAndWait(page, "Deny");
  await clickAndWait(page, "Approve");
  return clickAndWait(page, providerButton(page, steps.provider ?? "approve"));
}
