// Builds the page into OUTDIR (default dist/): agor.js and agor.css
// bundled by esbuild from the npm packages (PatternFly, xterm.js), the
// fonts they use, index.html, manifest.json, and po.LANG.js for Cockpit's
// translations from po/*.po. Nothing is fetched at run time.
import { build } from "esbuild";
import { mkdirSync, readdirSync, readFileSync, writeFileSync, copyFileSync, rmSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { poToCockpit } from "./src/po.js";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2] || join(here, "dist");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

await build({
	entryPoints: { agor: join(here, "src/app.js") },
	bundle: true,
	minify: true,
	format: "iife",
	target: "es2020",
	legalComments: "none",
	outdir: out,
	logLevel: "warning",
});
await build({
	entryPoints: { agor: join(here, "src/agor.css") },
	bundle: true,
	minify: true,
	outdir: out,
	assetNames: "fonts/[name]",
	// Only the woff2 fonts are shipped: every browser Cockpit supports reads them.
	loader: { ".woff2": "file", ".woff": "empty", ".ttf": "empty", ".otf": "empty", ".eot": "empty", ".svg": "dataurl", ".png": "empty", ".jpg": "empty" },
	logLevel: "warning",
});
for (const f of ["index.html", "manifest.json"]) copyFileSync(join(here, "src", f), join(out, f));
for (const f of readdirSync(join(here, "po")).filter(f => f.endsWith(".po"))) {
	const lang = f.slice(0, -3);
	writeFileSync(join(out, `po.${lang}.js`), poToCockpit(readFileSync(join(here, "po", f), "utf8"), lang));
}
