/* global cockpit */
// The person's files through the daemon's files API, beneath their
// executor's root (their home): browse, view, upload and download.
import { h, fill, button, card, alert, table } from "./dom.js";
import { call, get, esc } from "./api.js";

const _ = cockpit.gettext;
const viewMax = 256 << 10;

function join(dir, name) { return dir === "." ? name : dir + "/" + name; }
function parent(dir) { const i = dir.lastIndexOf("/"); return i < 0 ? "." : dir.slice(0, i); }

function b64(bytes) {
	let s = "";
	for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
	return btoa(s);
}

export function filesView(me) {
	let dir = ".";
	const where = h("p", { id: "agor-files-path" });
	const body = h("div", { id: "agor-files" });
	const viewer = h("div", { id: "agor-file-view" });
	const upload = h("input", { type: "file", multiple: true, "aria-label": _("Upload"), onchange: () => send() });
	const base = `/v1/executors/${esc(me.name)}/files`;

	async function list(d) {
		dir = d;
		fill(where, h("code", "~/" + (d === "." ? "" : d)));
		try {
			const res = await get(`${base}?path=${esc(d)}`);
			const rows = res.entries.sort((a, b) => (a.type !== b.type ? (a.type === "dir" ? -1 : 1) : a.path.localeCompare(b.path)));
			fill(body,
				d === "." ? null : button("..", () => list(parent(d)), "link"),
				table([_("Name"), _("Type"), _("Size"), _("Modified"), ""], rows.map(e => {
					const name = e.path.split("/").pop();
					const p = join(d, name);
					return [e.type === "dir" ? button(name + "/", () => list(p), "link") : button(name, () => view(p), "link"),
						e.type, e.type === "file" ? cockpit.format_bytes(e.size) : "", new Date(e.mtime_ms).toLocaleString(),
						e.type === "file" ? button(_("Download"), () => download(p), "secondary", { "data-agor": "download" }) : ""];
				})),
				res.truncated ? alert("info", _("The listing was cut short.")) : null);
		} catch (e) { fill(body, alert("danger", e.message)); }
	}

	async function fetchBytes(p) {
		return call("GET", `${base}/content?path=${esc(p)}`, undefined, { binary: true });
	}

	async function view(p) {
		try {
			const bytes = await fetchBytes(p);
			const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes.slice(0, viewMax));
			fill(viewer, card(p, h("pre.agor-file", text), bytes.length > viewMax ? alert("info", _("Only the start is shown.")) : null));
		} catch (e) { fill(viewer, alert("danger", e.message)); }
	}

	async function download(p) {
		try {
			const bytes = await fetchBytes(p);
			const a = h("a", { href: URL.createObjectURL(new Blob([bytes])), download: p.split("/").pop() });
			document.body.append(a);
			a.click();
			a.remove();
		} catch (e) { fill(viewer, alert("danger", e.message)); }
	}

	async function send() {
		try {
			const files = [];
			for (const f of upload.files) files.push({ path: join(dir, f.name), content: b64(new Uint8Array(await f.arrayBuffer())) });
			await call("POST", base, { files });
			upload.value = "";
			list(dir);
		} catch (e) { fill(viewer, alert("danger", e.message)); }
	}

	const el = h("div", card(_("Files"), where, h("div.agor-row", h("label", _("Upload to this directory: "), upload)), body), viewer);
	return { el, show() { list(dir); }, hide() {} };
}
