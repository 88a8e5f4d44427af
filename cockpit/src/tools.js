// A tool call as a person reads it: the command, the file and its
// change, the pattern or the address, instead of the agent's JSON. The
// shapes are those the executor passes on (internal/executor/agent):
// Claude Code's tool inputs as the model wrote them, codex's normalised
// exec_command and file_change, and the ACP agents' (gemini, opencode)
// rawInput or, when they send none, their whole tool call (title,
// content, locations). Anything else is shown as compact JSON.

export const clipAt = { text: 200, note: 200, side: 120 };

// clip shortens s to n characters, marking the cut as agorctl does.
export function clip(s, n) {
	s = String(s ?? "");
	return s.length > n ? s.slice(0, n) + "…" : s;
}

const str = (v) => (typeof v === "string" ? v : "");
const compact = (v) => {
	if (v === undefined) return "";
	try { return JSON.stringify(v) ?? ""; } catch { return String(v); }
};

// change is a short view of an edit: old → new, each side clipped; a
// side that is empty (a new file) is left out.
function change(before, after) {
	const b = clip(before, clipAt.side), a = clip(after, clipAt.side);
	return b ? `${b} → ${a}` : `→ ${a}`;
}

// A tool's input, field by field: the first reading whose fields are
// there wins. Each returns {text, note, change} or null.
const readings = [
	// Bash, codex's exec_command, opencode's bash: the command line.
	(i) => {
		const cmd = Array.isArray(i.command) ? i.command.map(String).join(" ") : str(i.command) || str(i.cmd);
		return cmd ? { text: cmd, note: str(i.description) || str(i.reason) } : null;
	},
	// Edit, MultiEdit, Write, NotebookEdit; opencode's edit and write
	// (camelCase) and its edit question ({filepath, diff}).
	(i) => {
		const path = str(i.file_path) || str(i.filePath) || str(i.filepath) || str(i.notebook_path);
		if (!path) return null;
		if (Array.isArray(i.edits) && i.edits.length) {
			const e = i.edits[0] || {};
			const more = i.edits.length > 1 ? ` (+${i.edits.length - 1})` : "";
			return { text: path, change: change(e.old_string ?? e.oldString, e.new_string ?? e.newString) + more };
		}
		if ("old_string" in i || "new_string" in i) return { text: path, change: change(i.old_string, i.new_string) };
		if ("oldString" in i || "newString" in i) return { text: path, change: change(i.oldString, i.newString) };
		if (typeof i.new_source === "string") return { text: path, note: str(i.cell_id) ? `cell ${i.cell_id}` : "", change: change("", i.new_source) };
		if (typeof i.content === "string") return { text: path, change: change("", i.content) };
		if (typeof i.diff === "string") return { text: path, change: clip(i.diff, clipAt.side * 2) };
		return { text: path }; // Read: the file it reads
	},
	// Glob, Grep (Claude Code's and opencode's): the pattern, where.
	(i) => (str(i.pattern) ? { text: i.pattern, note: str(i.path) ? `in ${i.path}` : "" } : null),
	// WebFetch, opencode's webfetch: the address, and what is asked of it.
	(i) => (str(i.url) ? { text: i.url, note: str(i.prompt) } : null),
	// WebSearch.
	(i) => (str(i.query) ? { text: i.query } : null),
	// codex's file_change: the files ({path, kind, diff} each, or a map
	// of path to change in older codex), the first one's diff.
	(i) => {
		if (!i.changes || typeof i.changes !== "object") return null;
		const list = Array.isArray(i.changes) ? i.changes : Object.entries(i.changes).map(([path, c]) => ({ path, ...(c && typeof c === "object" ? c : {}) }));
		const paths = list.map(c => str(c && c.path)).filter(Boolean);
		if (!paths.length) return null;
		const first = list[0] || {};
		const diff = str(first.diff) || str(first.unified_diff) || str(first.content);
		return { text: paths.join(", "), note: str(i.reason), change: diff ? clip(diff, clipAt.side * 2) : "" };
	},
	// An ACP tool call without rawInput (gemini): a diff in its content,
	// else the files it names.
	(i) => {
		const diff = Array.isArray(i.content) ? i.content.find(c => c && c.type === "diff") : null;
		if (diff) return { text: str(diff.path), change: change(diff.oldText, diff.newText) };
		const where = Array.isArray(i.locations) ? i.locations.map(l => str(l && l.path)).filter(Boolean) : [];
		if (where.length) return { text: where.join(", ") };
		return str(i.title) ? { text: i.title } : null;
	},
	// A path alone (Read of a notebook, an LS, a list_directory).
	(i) => (str(i.path) ? { text: i.path } : null),
	// Task: what the subagent is asked.
	(i) => (str(i.description) ? { text: i.description, note: str(i.subagent_type) } : null),
	// codex's MCP and dynamic tools: their arguments.
	(i) => ("arguments" in i ? { text: compact(i.arguments) } : null),
];

// toolView is what the page shows of a tool call or a question:
// {text: the command, file, pattern or address; note: what the agent
// said of it (a description, a reason), change: old → new of an edit},
// each clipped. An input it cannot read is its compact JSON.
export function toolView(name, input) {
	if (typeof input === "string") {
		const s = input.trim();
		if (s.startsWith("{")) {
			try { input = JSON.parse(s); } catch { /* a string, as it is */ }
		}
	}
	let v = null;
	if (input && typeof input === "object" && !Array.isArray(input)) {
		for (const read of readings) {
			v = read(input);
			if (v) break;
		}
		// An ACP agent names a call by its title, often the command
		// itself: said once, not twice.
		if (v && v.text === name) v.text = "";
	}
	if (!v) v = { text: typeof input === "string" ? input : compact(input) };
	return { text: clip(v.text, clipAt.text), note: clip(v.note || "", clipAt.note), change: v.change || "" };
}
