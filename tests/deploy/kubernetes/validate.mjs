// Validates Kubernetes manifests offline against the Kubernetes OpenAPI schemas, twice over:
//  1. JSON schema (ajv) through kubernetes-models / @kubernetes-models/prometheus-operator, whose
//     validators are generated from the Kubernetes OpenAPI spec and the prometheus-operator CRDs:
//     types, required fields, enums, formats.
//  2. Unknown fields: the OpenAPI schemas do not forbid extra properties, so a misspelt field
//     (readOnlly: true) would pass 1 and be dropped or refused by the API server. The same
//     packages' TypeScript interfaces are generated from the same schemas; every object is written
//     out as a TypeScript literal of its interface and type-checked, and TypeScript's excess
//     property check names any field the schema does not have.
// Usage: node validate.mjs <manifest.yaml>...   (run with node_modules of package.json here)
// Prints one line per object, every error with file, document and path; exit 1 on any error.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import YAML from "yaml";

const require = createRequire(import.meta.url);
const ts = require("typescript");

// apiVersion -> module directory of its models.
function modelModule(apiVersion, kind) {
  if (apiVersion === "v1") return `kubernetes-models/v1/${kind}`;
  if (apiVersion.startsWith("monitoring.coreos.com/"))
    return `@kubernetes-models/prometheus-operator/${apiVersion}/${kind}`;
  if (/^[a-z0-9.]+\/v[0-9a-z]+$/.test(apiVersion)) return `kubernetes-models/${apiVersion}/${kind}`;
  return null;
}

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node validate.mjs <manifest.yaml>...");
  process.exit(2);
}

let errors = 0;
let objects = 0;
const tsSources = [];  // {name, text, origin[]}
const tsDir = fs.mkdtempSync(path.join(path.dirname(new URL(import.meta.url).pathname), ".check-"));

for (const file of files) {
  const text = fs.readFileSync(file, "utf8");
  // YAML 1.1 like the API machinery (sigs.k8s.io/yaml): 0444 is octal, yes/no are booleans.
  const docs = YAML.parseAllDocuments(text, { version: "1.1" });
  let index = 0;
  for (const doc of docs) {
    index++;
    if (doc.errors.length) {
      for (const e of doc.errors) console.log(`FAIL ${file} doc ${index}: YAML: ${e.message}`);
      errors += doc.errors.length;
      continue;
    }
    const obj = doc.toJS();
    if (obj === null || obj === undefined) continue;
    const where = `${file} doc ${index} (${obj.kind ?? "?"} ${obj.metadata?.name ?? "?"})`;
    const mod = typeof obj.apiVersion === "string" && typeof obj.kind === "string"
      ? modelModule(obj.apiVersion, obj.kind) : null;
    if (!mod) {
      console.log(`FAIL ${where}: no schema for apiVersion ${obj.apiVersion} kind ${obj.kind}`);
      errors++;
      continue;
    }
    let Model;
    try {
      Model = (await import(mod))[obj.kind];
    } catch (e) {
      Model = undefined;
    }
    if (typeof Model !== "function") {
      console.log(`FAIL ${where}: unknown kind ${obj.kind} in ${obj.apiVersion} (${mod})`);
      errors++;
      continue;
    }
    objects++;
    let schemaOk = true;
    try {
      new Model(obj).validate();
    } catch (e) {
      schemaOk = false;
      const list = Array.isArray(e.errors) ? e.errors : [{ instancePath: "", message: e.message }];
      for (const v of list) {
        const extra = v.params && Object.keys(v.params).length ? ` ${JSON.stringify(v.params)}` : "";
        console.log(`FAIL ${where}: schema: ${v.instancePath || "/"} ${v.message}${extra}`);
        errors++;
      }
    }
    // The interface is I<Kind>, exported by the same module's declaration file.
    const name = `doc${tsSources.length}`;
    const body = JSON.stringify(obj, null, 2);
    tsSources.push({
      name,
      where,
      text: `import type { I${obj.kind} } from ${JSON.stringify(mod)};\n` +
            `export const ${name}: I${obj.kind} = ${body};\n`,
      schemaOk,
    });
  }
}

// Type-check every object in one TypeScript program (about a second).
const roots = [];
for (const s of tsSources) {
  const p = path.join(tsDir, `${s.name}.ts`);
  fs.writeFileSync(p, s.text);
  roots.push(p);
}
const program = ts.createProgram(roots, {
  strict: true, noEmit: true, skipLibCheck: true, types: [],
  module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10,
  target: ts.ScriptTarget.ES2020,
});
const unknown = new Map();  // source name -> messages
for (const d of ts.getPreEmitDiagnostics(program)) {
  const src = d.file ? tsSources.find((s) => path.join(tsDir, `${s.name}.ts`) === d.file.fileName) : undefined;
  const msg = ts.flattenDiagnosticMessageText(d.messageText, " ");
  let at = "";
  if (d.file && d.start !== undefined) {
    // The JSON path of the offending property, from the literal's nesting.
    at = jsonPathAt(d.file.text, d.start);
  }
  const key = src ? src.where : (d.file ? d.file.fileName : "typescript");
  if (!unknown.has(key)) unknown.set(key, []);
  unknown.get(key).push(`${at} ${msg}`.trim());
}
for (const [where, msgs] of unknown) {
  for (const m of msgs) console.log(`FAIL ${where}: fields: ${m}`);
  errors += msgs.length;
}
for (const s of tsSources) {
  if (s.schemaOk && !unknown.has(s.where)) console.log(`ok   ${s.where}`);
}
fs.rmSync(tsDir, { recursive: true, force: true });

console.log(`${objects} object(s) validated, ${errors} error(s)`);
process.exit(errors ? 1 : 0);

// "/spec/template/spec/containers/0/volumeMounts/3" for an offset in a pretty-printed literal.
function jsonPathAt(text, offset) {
  const sf = ts.createSourceFile("x.ts", text, ts.ScriptTarget.ES2020, true);
  let found = null;
  const visit = (node) => {
    if (offset >= node.getStart(sf) && offset < node.getEnd()) {
      found = node;
      ts.forEachChild(node, visit);
    }
  };
  visit(sf);
  const parts = [];
  for (let n = found; n; n = n.parent) {
    if (ts.isPropertyAssignment(n)) parts.unshift(n.name.getText(sf).replace(/^"|"$/g, ""));
    else if (n.parent && ts.isArrayLiteralExpression(n.parent)) parts.unshift(String(n.parent.elements.indexOf(n)));
    if (ts.isVariableDeclaration(n)) break;
  }
  return "/" + parts.join("/");
}
