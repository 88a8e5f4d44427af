// A tool call as the page words it: what each agent's tool input says,
// read as a person would, never its JSON unless nothing else fits.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { all } from "./shim.js";
import { toolView } from "../src/tools.js";
import { newTranscript, applyLine } from "../src/render.js";
import { question } from "../src/sessions.js";

const view = (text, note = "", change = "") => ({ text, note, change });

test("each agent's tool input reads as the command, the file and its change, the pattern or the address", () => {
	const cases = [
		// Claude Code.
		["Bash", { command: "id -un > cockpit-ran.txt; pwd", description: "Run id -un > cockpit-ran.txt; pwd" }, view("id -un > cockpit-ran.txt; pwd", "Run id -un > cockpit-ran.txt; pwd")],
		["Bash", { command: "make test", timeout: 60000 }, view("make test")],
		["Edit", { file_path: "/home/alice/main.go", old_string: "fmt.Println(1)", new_string: "fmt.Println(2)" }, view("/home/alice/main.go", "", "fmt.Println(1) → fmt.Println(2)")],
		["MultiEdit", { file_path: "a.go", edits: [{ old_string: "x", new_string: "y" }, { old_string: "p", new_string: "q" }] }, view("a.go", "", "x → y (+1)")],
		["Write", { file_path: "notes.txt", content: "hello\n" }, view("notes.txt", "", "→ hello\n")],
		["NotebookEdit", { notebook_path: "n.ipynb", cell_id: "c1", new_source: "print(1)" }, view("n.ipynb", "cell c1", "→ print(1)")],
		["Read", { file_path: "/etc/hostname" }, view("/etc/hostname")],
		["Glob", { pattern: "**/*.go" }, view("**/*.go")],
		["Grep", { pattern: "func main", path: "cmd", output_mode: "content" }, view("func main", "in cmd")],
		["WebFetch", { url: "https://example.org/", prompt: "the title" }, view("https://example.org/", "the title")],
		["WebSearch", { query: "agor cockpit" }, view("agor cockpit")],
		["Task", { description: "find the bug", prompt: "…", subagent_type: "general-purpose" }, view("find the bug", "general-purpose")],
		// codex (codex_events.go: exec_command, file_change, MCP tools).
		["exec_command", { command: "ls -la", cwd: "/home/alice", tool_use_id: "i1", reason: "to see the files" }, view("ls -la", "to see the files")],
		["exec_command", { command: ["bash", "-lc", "ls"], cwd: "/home/alice" }, view("bash -lc ls")],
		["file_change", { changes: [{ path: "a.txt", kind: { type: "update" }, diff: "-a\n+b\n" }, { path: "b.txt", kind: { type: "add" }, diff: "+new\n" }] }, view("a.txt, b.txt", "", "-a\n+b\n")],
		["file_change", { changes: { "c.txt": { type: "add", content: "c\n" } }, grant_root: "" }, view("c.txt", "", "c\n")],
		["docs/search", { arguments: { q: "x" } }, view('{"q":"x"}')],
		// opencode (ACP with rawInput): its title is the command itself.
		["ls -la", { command: "ls -la", description: "Lists files" }, view("", "Lists files")],
		["src/a.ts", { filePath: "/home/alice/src/a.ts", oldString: "let a", newString: "const a" }, view("/home/alice/src/a.ts", "", "let a → const a")],
		["edit", { filepath: "/home/alice/a.ts", diff: "--- a\n+++ b\n" }, view("/home/alice/a.ts", "", "--- a\n+++ b\n")],
		["https://example.org", { url: "https://example.org", format: "markdown" }, view("")],
		// gemini (ACP without rawInput: the whole tool call).
		["WriteFile", { toolCallId: "c1", title: "WriteFile", kind: "edit", content: [{ type: "diff", path: "/home/alice/x.txt", oldText: null, newText: "x" }], locations: [{ path: "/home/alice/x.txt" }] }, view("/home/alice/x.txt", "", "→ x")],
		["README.md", { toolCallId: "c2", title: "README.md", kind: "read", content: [], locations: [{ path: "/home/alice/README.md" }] }, view("/home/alice/README.md")],
		["ls -la [current working directory /home/alice]", { toolCallId: "c3", title: "ls -la [current working directory /home/alice]", kind: "execute", content: [], locations: [] }, view("")],
	];
	for (const [name, input, want] of cases) assert.deepEqual(toolView(name, input), want, `${name} ${JSON.stringify(input)}`);
});

test("a tool the page does not know shows its input as compact JSON", () => {
	assert.deepEqual(toolView("TodoWrite", { todos: [{ content: "a", status: "pending" }] }), view('{"todos":[{"content":"a","status":"pending"}]}'));
	assert.deepEqual(toolView("x", {}), view("{}"));
	assert.deepEqual(toolView("x", [1, "a"]), view('[1,"a"]'));
	assert.deepEqual(toolView("x", 5), view("5"));
	assert.deepEqual(toolView("x", null), view("null"));
	assert.deepEqual(toolView("x", undefined), view(""));
	assert.deepEqual(toolView("x", "as written"), view("as written"));
	assert.deepEqual(toolView("Bash", '{"command":"ls"}'), view("ls"), "an input sent as a JSON string");
});

test("long inputs are clipped: the command, the note and each side of a change", () => {
	const long = "x".repeat(1000);
	const bash = toolView("Bash", { command: long, description: long });
	assert.equal(bash.text, "x".repeat(200) + "…");
	assert.equal(bash.note, "x".repeat(200) + "…");
	const edit = toolView("Edit", { file_path: "a", old_string: long, new_string: long });
	assert.equal(edit.change, `${"x".repeat(120)}… → ${"x".repeat(120)}…`);
	assert.equal(toolView("x", { v: long }).text.length, 201);
});

test("the transcript's tool calls and questions carry the readable words", () => {
	const t = newTranscript();
	const ev = (seq, type, data) => ({ event: { sequence: seq, event_type: type, event_data: { type, data } } });
	applyLine(t, ev(1, "tool_call", { tool_use_id: "u1", tool_name: "Edit", tool_input: { file_path: "a.go", old_string: "1", new_string: "2" } }));
	applyLine(t, ev(2, "permission_asked", { tool_use_id: "u1", tool_name: "Bash", tool_input: { command: "id -un", description: "who" } }));
	assert.deepEqual(t.blocks.map(b => [b.kind, b.name, b.input, b.note, b.change]), [["tool", "Edit", "a.go", "", "1 → 2"], ["ask", "Bash", "id -un", "who", ""]]);
});

test("a permission question (GET /v1/permissions) shows the command as text, not JSON", () => {
	const { permissions } = JSON.parse(readFileSync(new URL("../../internal/wire/apiwire/testdata/permission_list.json", import.meta.url), "utf8"));
	const decided = [];
	const q = question({ ...permissions[0], tool_input: { command: "id -un > cockpit-ran.txt; pwd", description: "Run it" } }, (id, ok) => decided.push([id, ok]));
	assert.equal(q.getAttribute("data-permission"), permissions[0].id);
	const words = all(q, n => n.getAttribute("data-agor") === "question-tool")[0].textContent;
	assert.equal(words, "Bash id -un > cockpit-ran.txt; pwd — Run it");
	assert.match(q.textContent, /asked by alice's task t1/);
	all(q, n => n.getAttribute("data-agor") === "approve")[0].click();
	assert.deepEqual(decided, [[permissions[0].id, true]]);
	assert.equal(question(permissions[0], () => {}).textContent.includes("{"), false, "the golden's input, read");
});
