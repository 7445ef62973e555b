// Check AG-UI events (one JSON object a line on stdin) against one @ag-ui/core's own EventSchemas:
// node schemas.mjs <folder whose node_modules holds @ag-ui/core>. Prints {version, errors: [...]} as JSON.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";

const folder = path.resolve(process.argv[2]);
const require = createRequire(path.join(folder, "package.json"));
const pkg = JSON.parse(readFileSync(require.resolve("@ag-ui/core/package.json"), "utf8"));
let core;
try {
  core = require("@ag-ui/core/schemas"); // 1.0 keeps its zod schemas in a subpath
} catch {
  core = require("@ag-ui/core");
}
const errors = [];
for (const line of readFileSync(0, "utf8").split("\n").filter(Boolean)) {
  const event = JSON.parse(line);
  const result = core.EventSchemas.safeParse(event);
  if (!result.success) errors.push({ type: event.type, error: result.error.issues.map((i) => i.message).join("; ") });
}
console.log(JSON.stringify({ version: pkg.version, errors }));
