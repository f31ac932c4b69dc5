export * from "./properties.ts";
export * from "./verdict.ts";
