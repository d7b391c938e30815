export * from "./constants.ts";
export * from "./errors.ts";
export * from "./schemas.ts";
export * from "./provider-config.ts";
export * from "./identity.ts";
