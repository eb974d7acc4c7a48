// The page loads board.js as a module, and every module it reaches is a file beside it
// (the route serves /board/static/<name> for the files of static/ only; no subfolder, no
// code from elsewhere).

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";

const STATIC = new URL("../", import.meta.url);
const source = (name) => readFileSync(new URL(name, STATIC), "utf8");
const imports = (name) => [...source(name).matchAll(/^import\s[^;]*?from\s+"([^"]+)";/gms)].map((m) => m[1]);

test("index.html loads board.js as a module from this origin", () => {
  assert.match(source("index.html"), /<script src="\/board\/static\/board\.js" type="module"><\/script>/);
});

test("every module board.js reaches is ./<name>.js beside it", () => {
  const seen = new Set();
  const visit = (name) => {
    if (seen.has(name)) return;
    seen.add(name);
    for (const spec of imports(name)) {
      assert.match(spec, /^\.\/[a-z0-9-]+\.js$/, `${name} imports ${spec}`);
      assert.ok(existsSync(new URL(spec, STATIC)), `${name} imports ${spec}, which is missing`);
      visit(spec.slice(2));
    }
  };
  visit("board.js");
  const modules = readdirSync(STATIC).filter((f) => f.endsWith(".js"));
  assert.deepEqual([...seen].sort(), modules.sort(), "every module is used, and only those");
});
