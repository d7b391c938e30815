/**
 * What the reference MCP server offers (tests/helpers/reference-mcp/serve.ts serves it): the tools, resources and
 * prompts the official conformance suite's server scenarios call by name (`@modelcontextprotocol/conformance`
 * 0.2.0-alpha.12, both revisions), written once on the official SDK 2.x for both wires. Everything that asks the client
 * for something is written the 2026 way — a handler that returns `inputRequired(…)` and reads `inputResponses` on
 * re-entry — which the SDK serves on a 2025 session by pushing the requests to the client (its legacy shim), so one
 * definition behaves right on either wire. Every tool call is recorded (`seen`), so a test can tell what reached it.
 */
import {
  acceptedContent,
  CLIENT_CAPABILITIES_META_KEY,
  createRequestStateCodec,
  fromJsonSchema,
  inputRequired,
  McpServer,
  ProtocolError,
  ProtocolErrorCode,
  ResourceTemplate,
  type CallToolResult,
  type InputRequests,
  type InputRequiredResult,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { z } from "zod";

/** A tool call that reached the server: its name, arguments, and the headers an intermediary might have changed. */
export interface SeenCall {
  tool: string;
  args: Record<string, unknown>;
  authorization: string | null;
  era: "legacy" | "modern";
}

export interface Surface {
  /** Every tool call that reached a handler, in order. */
  seen: SeenCall[];
  /** Publishes a tools/prompts list change to open `subscriptions/listen` streams (set by the modern handler). */
  notify: { toolsChanged(): void; promptsChanged(): void };
}

const IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";
const text = (t: string): CallToolResult => ({ content: [{ type: "text", text: t }] });
const nameSchema = { type: "object" as const, properties: { name: { type: "string" as const } }, required: ["name"] };

/** One server instance (per request on the 2026 wire, per session on 2025), sharing `surface`'s log and state codec. */
export function referenceServer(surface: Surface, era: "legacy" | "modern", codec = stateCodec): McpServer {
  const server = new McpServer(
    { name: "ath-reference-mcp", version: "1.0.0" },
    {
      capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true }, prompts: { listChanged: true }, logging: {}, completions: {} },
      requestState: { verify: codec.verify },
    },
  );
  const tool = <A extends Record<string, unknown>>(
    name: string,
    inputSchema: unknown,
    run: (args: A, ctx: ServerContext) => Promise<CallToolResult | InputRequiredResult>,
  ) =>
    server.registerTool(name, { description: name.replaceAll("_", " "), ...(inputSchema ? { inputSchema: inputSchema as never } : {}) }, (async (...given: unknown[]) => {
      // a tool without an input schema is called with the context alone
      const [args, ctx] = (inputSchema ? given : [{}, given[0]]) as [A, ServerContext];
      surface.seen.push({ tool: name, args: { ...args }, authorization: ctx.http?.req?.headers.get("authorization") ?? null, era });
      return run(args, ctx);
    }) as never);
  const none = z.object({});

  tool("test_simple_text", undefined, async () => text("This is a simple text response for testing."));
  tool("test_image_content", undefined, async () => ({ content: [{ type: "image", data: IMAGE, mimeType: "image/png" }] }));
  tool("test_audio_content", undefined, async () => ({ content: [{ type: "audio", data: AUDIO, mimeType: "audio/wav" }] }));
  tool("test_embedded_resource", undefined, async () => ({
    content: [{ type: "resource", resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." } }],
  }));
  tool("test_multiple_content_types", undefined, async () => ({
    content: [
      { type: "text", text: "Multiple content types test:" },
      { type: "image", data: IMAGE, mimeType: "image/png" },
      { type: "resource", resource: { uri: "test://mixed-content-resource", mimeType: "application/json", text: JSON.stringify({ test: "data", value: 123 }) } },
    ],
  }));
  tool("test_error_handling", undefined, async () => {
    throw new Error("This tool intentionally returns an error for testing");
  });
  tool("test_tool_with_logging", none, async (_a, ctx) => {
    for (const data of ["Tool execution started", "Tool processing data", "Tool execution completed"]) {
      await ctx.mcpReq.notify({ method: "notifications/message", params: { level: "info", data } });
      await Bun.sleep(20);
    }
    return text("Tool with logging executed successfully");
  });
  tool("test_tool_with_progress", none, async (_a, ctx) => {
    const token = ctx.mcpReq._meta?.progressToken;
    if (token !== undefined) {
      for (const progress of [0, 50, 100]) {
        await ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, progress, total: 100, message: `step ${progress}` } });
        if (progress < 100) await Bun.sleep(20);
      }
    }
    return text(String(token ?? "no-progress-token"));
  });
  tool("test_logging_tool", none, async (_a, ctx) => {
    await ctx.mcpReq.log("info", "test_logging_tool ran");
    return text("logged through the request's logLevel");
  });
  tool("test_streaming_elicitation", none, async () => text("result frames only"));
  tool("test_missing_capability", none, async (_a, ctx) =>
    ctx.mcpReq.inputResponses?.llm_answer === undefined
      ? inputRequired({ inputRequests: { llm_answer: inputRequired.createMessage({ messages: [{ role: "user", content: { type: "text", text: "Reply: pong" } }], maxTokens: 16 }) } })
      : text("sampling round-trip complete"),
  );
  tool("test_trigger_tool_change", none, async () => (surface.notify.toolsChanged(), text("tools_list_changed published")));
  tool("test_trigger_prompt_change", none, async () => (surface.notify.promptsChanged(), text("prompts_list_changed published")));
  tool(
    "test_x_mcp_header",
    fromJsonSchema<{ region?: string; level?: number }>({
      type: "object",
      properties: { region: { type: "string", "x-mcp-header": "Region" }, level: { type: "integer" } },
    } as never),
    async (args) => text(`region=${String(args.region ?? "<none>")}`),
  );

  // 2025's push-style interactions, written the 2026 way (the SDK pushes them on a 2025 session)
  tool("test_sampling", z.object({ prompt: z.string() }), async (args, ctx) => {
    const answer = ctx.mcpReq.inputResponses?.llm as { content?: { text?: string } } | undefined;
    if (answer === undefined) {
      return inputRequired({ inputRequests: { llm: inputRequired.createMessage({ messages: [{ role: "user", content: { type: "text", text: String(args.prompt) } }], maxTokens: 100 }) } });
    }
    return text(`LLM response: ${answer.content?.text ?? "No response"}`);
  });
  const elicitTool = (name: string, message: (a: Record<string, unknown>) => string, requestedSchema: Record<string, unknown>, args: unknown = none) =>
    tool(name, args, async (a, ctx) => {
      const answer = ctx.mcpReq.inputResponses?.form as { action?: string; content?: unknown } | undefined;
      if (answer === undefined) return inputRequired({ inputRequests: { form: inputRequired.elicit({ message: message(a), requestedSchema } as never) } });
      return text(`Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`);
    });
  elicitTool("test_elicitation", (a) => String(a.message), { type: "object", properties: { response: { type: "string", description: "User's response" } }, required: ["response"] }, z.object({ message: z.string() }));
  elicitTool("test_elicitation_sep1034_defaults", () => "Please review and update the form fields with defaults", {
    type: "object",
    properties: {
      name: { type: "string", description: "User name", default: "John Doe" },
      age: { type: "integer", description: "User age", default: 30 },
      score: { type: "number", description: "User score", default: 95.5 },
      status: { type: "string", description: "User status", enum: ["active", "inactive", "pending"], default: "active" },
      verified: { type: "boolean", description: "Verification status", default: true },
    },
    required: [],
  });
  elicitTool("test_elicitation_sep1330_enums", () => "Please select options from the enum fields", {
    type: "object",
    properties: {
      untitledSingle: { type: "string", description: "Select one option", enum: ["option1", "option2", "option3"] },
      titledSingle: { type: "string", description: "Select one option with titles", oneOf: [{ const: "value1", title: "First Option" }, { const: "value2", title: "Second Option" }, { const: "value3", title: "Third Option" }] },
      legacyEnum: { type: "string", description: "Select one option (legacy)", enum: ["opt1", "opt2", "opt3"], enumNames: ["Option One", "Option Two", "Option Three"] },
      untitledMulti: { type: "array", description: "Select multiple options", minItems: 1, maxItems: 3, items: { type: "string", enum: ["option1", "option2", "option3"] } },
      titledMulti: { type: "array", description: "Select multiple options with titles", minItems: 1, maxItems: 3, items: { anyOf: [{ const: "value1", title: "First Choice" }, { const: "value2", title: "Second Choice" }, { const: "value3", title: "Third Choice" }] } },
    },
    required: [],
  });

  // multi-round-trip requests (SEP-2322)
  tool("test_input_required_result_elicitation", none, async (_a, ctx) => {
    const name = acceptedContent<{ name: string }>(ctx.mcpReq.inputResponses, "user_name")?.name;
    if (typeof name === "string") return text(`Hello, ${name}!`);
    return inputRequired({ inputRequests: { user_name: inputRequired.elicit({ message: "What is your name?", requestedSchema: nameSchema }) } });
  });
  tool("test_input_required_result_sampling", none, async (_a, ctx) => {
    const answer = ctx.mcpReq.inputResponses?.capital_question as { content?: { text?: string } } | undefined;
    if (answer !== undefined) return text(`Sampling response: ${answer.content?.text ?? JSON.stringify(answer)}`);
    return inputRequired({ inputRequests: { capital_question: inputRequired.createMessage({ messages: [{ role: "user", content: { type: "text", text: "What is the capital of France?" } }], maxTokens: 100 }) } });
  });
  tool("test_input_required_result_list_roots", none, async (_a, ctx) => {
    const roots = (ctx.mcpReq.inputResponses?.client_roots as { roots?: { uri?: string }[] } | undefined)?.roots;
    if (Array.isArray(roots)) return text(`Client exposed ${roots.length} root(s): ${roots.map((r) => r.uri).join(", ")}`);
    return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
  });
  const confirm = () => ({ confirm: inputRequired.elicit({ message: "Please confirm", requestedSchema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] } }) });
  tool("test_input_required_result_request_state", none, async (_a, ctx) => {
    if (acceptedContent(ctx.mcpReq.inputResponses, "confirm") === undefined) {
      return inputRequired({ inputRequests: confirm(), requestState: await codec.mint({ tool: "request_state", nonce: crypto.randomUUID() }) });
    }
    if (ctx.mcpReq.requestState() === undefined) throw new ProtocolError(ProtocolErrorCode.InvalidParams, "Invalid requestState");
    return text("state-ok: requestState verified and confirmation received");
  });
  tool("test_input_required_result_multiple_inputs", none, async (_a, ctx) => {
    const r = ctx.mcpReq.inputResponses;
    const name = acceptedContent<{ name: string }>(r, "user_name")?.name;
    const greeting = (r?.greeting as { content?: { text?: string } } | undefined)?.content?.text;
    const roots = (r?.client_roots as { roots?: unknown[] } | undefined)?.roots;
    if (typeof name === "string" && typeof greeting === "string" && Array.isArray(roots)) return text(`${greeting} ${name} — ${roots.length} root(s) visible`);
    return inputRequired({
      inputRequests: {
        user_name: inputRequired.elicit({ message: "What is your name?", requestedSchema: nameSchema }),
        greeting: inputRequired.createMessage({ messages: [{ role: "user", content: { type: "text", text: "Generate a greeting" } }], maxTokens: 50 }),
        client_roots: inputRequired.listRoots(),
      },
      requestState: await codec.mint({ tool: "multiple_inputs", nonce: crypto.randomUUID() }),
    });
  });
  tool("test_input_required_result_multi_round", none, async (_a, ctx) => {
    const state = ctx.mcpReq.requestState<Record<string, unknown>>();
    const round = state?.tool === "multi_round" && typeof state.round === "number" ? state.round : 0;
    if (round === 0) {
      return inputRequired({
        inputRequests: { step1: inputRequired.elicit({ message: "Step 1: What is your name?", requestedSchema: nameSchema }) },
        requestState: await codec.mint({ tool: "multi_round", round: 1, nonce: crypto.randomUUID() }),
      });
    }
    if (round === 1) {
      const name = acceptedContent<{ name: string }>(ctx.mcpReq.inputResponses, "step1")?.name ?? "unknown";
      return inputRequired({
        inputRequests: { step2: inputRequired.elicit({ message: "Step 2: What is your favorite color?", requestedSchema: { type: "object", properties: { color: { type: "string" } }, required: ["color"] } }) },
        requestState: await codec.mint({ tool: "multi_round", round: 2, name, nonce: crypto.randomUUID() }),
      });
    }
    const color = acceptedContent<{ color: string }>(ctx.mcpReq.inputResponses, "step2")?.color ?? "unknown";
    return text(`Multi-round complete: ${String(state?.name ?? "unknown")} likes ${color}`);
  });
  tool("test_input_required_result_tampered_state", none, async (_a, ctx) => {
    if (ctx.mcpReq.requestState() !== undefined && acceptedContent(ctx.mcpReq.inputResponses, "confirm") !== undefined) return text("integrity-ok");
    return inputRequired({ inputRequests: confirm(), requestState: await codec.mint({ tool: "tampered_state", nonce: crypto.randomUUID() }) });
  });
  tool("test_input_required_result_capabilities", none, async (_a, ctx) => {
    if (ctx.mcpReq.inputResponses !== undefined) return text("Capability-aware input requests fulfilled");
    // what the client declared: in this request (2026) or when it opened the session (2025)
    const declared = (ctx.mcpReq.envelope as Record<string, { elicitation?: unknown; sampling?: unknown; roots?: unknown } | undefined> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] ?? server.server.getClientCapabilities();
    const inputRequests: InputRequests = {};
    if (declared?.elicitation !== undefined) inputRequests.user_name = inputRequired.elicit({ message: "What is your name?", requestedSchema: nameSchema });
    if (declared?.sampling !== undefined) inputRequests.greeting = inputRequired.createMessage({ messages: [{ role: "user", content: { type: "text", text: "Greet" } }], maxTokens: 50 });
    if (declared?.roots !== undefined) inputRequests.client_roots = inputRequired.listRoots();
    return Object.keys(inputRequests).length ? inputRequired({ inputRequests }) : text("No declared client capability supports an in-band input request");
  });

  resources(server);
  prompts(server);
  server.server.setRequestHandler("logging/setLevel", async () => ({}));
  server.server.setRequestHandler("completion/complete", async () => ({ completion: { values: [], total: 0, hasMore: false } }));
  server.server.setRequestHandler("resources/subscribe", async () => ({}));
  server.server.setRequestHandler("resources/unsubscribe", async () => ({}));
  return server;
}

/** The HMAC codec the server's own `requestState`s are minted and verified with (one per process, as a real server's). */
export const stateCodec = createRequestStateCodec<Record<string, unknown>>({ key: crypto.getRandomValues(new Uint8Array(32)) });

// internal

function resources(server: McpServer): void {
  const fixed = (name: string, uri: string, mimeType: string, content: { text: string } | { blob: string }) =>
    server.registerResource(name, uri, { title: name, description: `${name} resource`, mimeType }, async () => ({ contents: [{ uri, mimeType, ...content }] }));
  fixed("static-text", "test://static-text", "text/plain", { text: "This is the content of the static text resource." });
  fixed("static-binary", "test://static-binary", "image/png", { blob: IMAGE });
  fixed("watched-resource", "test://watched-resource", "text/plain", { text: "Watched resource content" });
  server.registerResource("template", new ResourceTemplate("test://template/{id}/data", { list: undefined }), { title: "template", description: "A resource template", mimeType: "application/json" }, async (uri, v) => ({
    contents: [{ uri: uri.toString(), mimeType: "application/json", text: JSON.stringify({ id: v.id, templateTest: true, data: `Data for ID: ${String(v.id)}` }) }],
  }));
}

function prompts(server: McpServer): void {
  const say = (t: string) => ({ role: "user" as const, content: { type: "text" as const, text: t } });
  server.registerPrompt("test_simple_prompt", { title: "Simple", description: "A simple prompt" }, async () => ({ messages: [say("This is a simple prompt for testing.")] }));
  server.registerPrompt("test_prompt_with_arguments", { title: "With arguments", description: "A prompt with arguments", argsSchema: z.object({ arg1: z.string(), arg2: z.string() }) }, async (a) => ({
    messages: [say(`Prompt with arguments: arg1='${a.arg1}', arg2='${a.arg2}'`)],
  }));
  server.registerPrompt("test_prompt_with_embedded_resource", { title: "Embedded resource", description: "A prompt with a resource", argsSchema: z.object({ resourceUri: z.string() }) }, async (a) => ({
    messages: [{ role: "user", content: { type: "resource", resource: { uri: a.resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." } } }, say("Please process the embedded resource above.")],
  }));
  server.registerPrompt("test_prompt_with_image", { title: "With image", description: "A prompt with an image" }, async () => ({
    messages: [{ role: "user", content: { type: "image", data: IMAGE, mimeType: "image/png" } }, say("Please analyze the image above.")],
  }));
  server.registerPrompt("test_input_required_result_prompt", { title: "MRTR prompt", description: "A prompt that asks for context first" }, (async (ctx: ServerContext) => {
    const context = acceptedContent<{ context: string }>(ctx.mcpReq.inputResponses, "user_context")?.context;
    if (typeof context === "string") return { messages: [say(`Use the following context: ${context}`)] };
    return inputRequired({
      inputRequests: { user_context: inputRequired.elicit({ message: "What context should the prompt use?", requestedSchema: { type: "object", properties: { context: { type: "string" } }, required: ["context"] } }) },
    });
  }) as never);
}
