/* global cockpit */
// Sessions and tasks, the prompt box, a task's events live, and the
// person's open permission questions.
import { h, fill, button, card, alert, label, table, field, select } from "./dom.js";
import { call, get, stream, esc } from "./api.js";
import { newTranscript, applyLine, applySSE, Lines, SSE, resumable } from "./render.js";
import { toolView } from "./tools.js";
import { transcriptView, toolWords } from "./transcript.js";
import { prewarmer, prewarmBody } from "./prewarm.js";
import { allPages } from "./pages.js";
import { loadProjects } from "./projects.js";

const _ = cockpit.gettext;

const statusColor = { completed: "green", running: "blue", queued: "blue", failed: "red", cancelled: "orange", interrupted: "orange", timeout: "orange" };
const statusLabel = (s) => label(s || "—", statusColor[s]);

// testHooks says whether the browser check asked for its hooks (it sets
// localStorage "agor-test-hooks" before it logs in).
function testHooks() {
	try { return window.localStorage.getItem("agor-test-hooks") === "1"; } catch { return false; }
}

// question is one open permission question (an entry of GET
// /v1/permissions): the tool and its input as a person reads them, who
// asked, and the buttons that answer it (decide(id, approved)).
export function question(p, decide) {
	return h("div.agor-question", { "data-permission": p.id },
		h("div.agor-question-tool", { "data-agor": "question-tool" }, toolWords(String(p.tool_name || ""), toolView(p.tool_name, p.tool_input))),
		h("p.agor-question-asked", cockpit.format(_("asked by $0's task $1"), p.user, String(p.task || "").slice(0, 8))),
		h("div.agor-row",
			button(_("Approve"), () => decide(p.id, true), "primary", { "data-agor": "approve" }),
			button(_("Deny"), () => decide(p.id, false), "danger", { "data-agor": "deny" })));
}

// sessionsView is the Sessions tab; attach(id) shows terminal id in the
// Terminal tab (an interactive session's UI).
export function sessionsView(me, { attach = null } = {}) {
	const state = { session: "", task: "", follow: null, sessions: [] };
	const errors = h("div.agor-errors");
	const sessionsBody = h("div", { id: "agor-sessions" });
	const tasksBody = h("div", { id: "agor-tasks" });
	const questions = h("div", { id: "agor-questions" });
	const transcriptEl = h("div.agor-transcript", { id: "agor-transcript" });
	const summaryEl = h("div", { id: "agor-task-status" });

	const showError = (e) => fill(errors, alert("danger", e.message || String(e), { "data-agor": "error" }));

	// The prompt box.
	const tool = select("agent", [["claude-code", "Claude Code"], ["codex", "Codex"], ["gemini", "Gemini"], ["opencode", "OpenCode"]], "claude-code");
	const mode = select("mode", [["default", _("default: ask before tools")], ["acceptEdits", "acceptEdits"], ["bypassPermissions", "bypassPermissions"], ["plan", _("plan: change nothing")]], "default");
	const sandbox = select("sandbox", [["", _("daemon default")], ["off", "off"], ["workspace", "workspace"], ["read-only", "read-only"]], "");
	// Her projects (projects.js): never the home, which the daemon's
	// default (sandbox.prompts: workspace) refuses; the first is the default.
	const projectList = h("datalist", { id: "agor-projects" });
	const cwd = h("input", { type: "text", name: "cwd", value: "", list: "agor-projects", "aria-label": "cwd", placeholder: _("a project in your home, e.g. src/app") });
	let cwdChosen = false; // typed or picked by her: not replaced by a default
	cwd.addEventListener("input", () => { cwdChosen = true; });
	// Empty: the daemon's environments.default; a follow-up runs where its session started.
	const env = h("input", { type: "text", name: "environment", value: "", "aria-label": "environment", placeholder: _("daemon default") });
	const prompt = h("textarea", { name: "prompt", rows: 3, "aria-label": _("Prompt"), placeholder: _("What should the agent do?") });
	const cont = h("input", { type: "checkbox", name: "continue", id: "agor-continue" });
	const send = button(_("Send"), () => runPrompt(), "primary", { id: "agor-send" });
	const form = h("form.pf-v5-c-form.agor-prompt", { onsubmit: (e) => { e.preventDefault(); runPrompt(); } },
		h("div.agor-row", field(_("Agent"), tool), field(_("Permission mode"), mode), field(_("Sandbox"), sandbox), field(_("Working directory"), cwd), field(_("Environment"), env)),
		projectList,
		field(_("Prompt"), prompt),
		h("div.agor-row", h("label.agor-check", cont, " ", _("Continue the selected session")), send));

	// Writing a prompt predicts one: its agent starts meanwhile.
	const schedulePrewarm = prewarmer((b) => call("POST", `/v1/executors/${esc(me.name)}/prewarm`, b));
	const prewarm = () => cwd.value.trim() && schedulePrewarm(prewarmBody({ tool: tool.value, cwd: cwd.value.trim(), mode: mode.value, sandbox: sandbox.value, env: env.value.trim(), session: cont.checked ? state.session : "" }));
	prompt.addEventListener("focus", prewarm);
	for (const el of [tool, mode, sandbox, cwd, env, cont]) el.addEventListener("change", () => { if (document.activeElement === prompt || prompt.value) prewarm(); });

	// refreshProjects offers her projects, and makes the newest the
	// default while she has chosen none.
	async function refreshProjects() {
		const list = (p) => get(`/v1/executors/${esc(me.name)}/files?path=${encodeURIComponent(p)}&max=${p === "." ? 1000 : 1}`);
		const found = await loadProjects(list, state.sessions, me.name);
		fill(projectList, found.map(p => h("option", { value: p })));
		if (!cwdChosen) cwd.value = found[0] || "";
		cwd.setAttribute("data-projects", String(found.length));
	}

	async function refreshSessions() {
		try {
			const sessions = await allPages(q => get("/v1/sessions?" + q), "sessions");
			state.sessions = sessions;
			sessions.sort((a, b) => b.updated_at.localeCompare(a.updated_at));
			fill(sessionsBody, sessions.length === 0
				? h("p.agor-empty", { "data-agor": "no-sessions" }, _("No sessions yet."))
				: table([_("Session"), _("Person"), _("Agent"), _("Directory"), _("Mode"), _("Status"), _("Updated")], sessions.map(s =>
					h("tr.pf-v5-c-table__tr" + (s.id === state.session ? ".pf-m-selected" : ""), { "data-session": s.id, "data-user": s.unix_user, onclick: () => selectSession(s.id) }, [
						h("td.pf-v5-c-table__td", h("a", { href: "#" }, s.id.slice(0, 8))), h("td.pf-v5-c-table__td", s.unix_user),
						h("td.pf-v5-c-table__td", s.agentic_tool), h("td.pf-v5-c-table__td", s.cwd), h("td.pf-v5-c-table__td", s.permission_mode),
						h("td.pf-v5-c-table__td", statusLabel(s.status)), h("td.pf-v5-c-table__td", new Date(s.updated_at).toLocaleString()),
					])), { "aria-label": _("Sessions") }));
		} catch (e) { showError(e); }
	}

	async function selectSession(id) {
		state.session = id;
		cont.checked = true;
		await refreshSessions();
		await refreshTasks();
	}

	async function refreshTasks() {
		if (!state.session) return fill(tasksBody);
		try {
			const tasks = await allPages(q => get(`/v1/sessions/${esc(state.session)}/tasks?` + q), "tasks");
			fill(tasksBody, table([_("Task"), _("Prompt"), _("Status"), _("Tokens in/out"), _("Time")], tasks.map(t => {
				const u = (t.result && t.result.token_usage) || {};
				const secs = t.ended_at ? ((new Date(t.ended_at) - new Date(t.created_at)) / 1000).toFixed(1) + " s" : "…";
				return h("tr.pf-v5-c-table__tr", { "data-task": t.id, onclick: () => followTask(t.id) }, [
					h("td.pf-v5-c-table__td", h("a", { href: "#" }, t.id.slice(0, 8))), h("td.pf-v5-c-table__td", t.prompt.slice(0, 80)),
					h("td.pf-v5-c-table__td", statusLabel(t.status)), h("td.pf-v5-c-table__td", `${u.input_tokens || 0} / ${u.output_tokens || 0}`),
					h("td.pf-v5-c-table__td", secs)]);
			}), { "aria-label": _("Tasks") }));
		} catch (e) { showError(e); }
	}

	function stopFollowing() {
		if (state.follow) state.follow.close();
		state.follow = null;
	}

	// followTask replays a task's events and follows it live (SSE).
	function followTask(id) {
		stopFollowing();
		state.task = id;
		const t = newTranscript();
		t.task = id;
		const sse = new SSE();
		draw(t);
		const req = stream("GET", `/v1/tasks/${esc(id)}/events?follow=1`, undefined, (chunk) => {
			try {
				for (const m of sse.push(chunk)) applySSE(t, m);
			} catch (e) {
				t.error = cockpit.format(_("The daemon's stream could not be read: $0"), e.message);
				req.close();
			}
			draw(t);
		});
		state.follow = req;
		req.then(() => { draw(t); refreshTasks(); }, (e) => { t.error = e.message; draw(t); });
	}

	// runPrompt sends the prompt and renders its stream as it comes.
	function runPrompt() {
		if (!prompt.value.trim()) return;
		fill(errors);
		if (!cwd.value.trim()) { // nothing the daemon's default would take: said here, nothing sent
			return showError(new Error(_("Choose a working directory: a project in your home (none yet: make one, e.g. mkdir -p ~/src/app in the terminal).")));
		}
		stopFollowing();
		const body = { agentic_tool: tool.value, prompt: prompt.value, cwd: cwd.value.trim(), permission_mode: mode.value, sandbox: sandbox.value || undefined, environment: env.value.trim() || undefined, session_id: cont.checked ? state.session : "" };
		const t = newTranscript();
		const lines = new Lines();
		send.disabled = true;
		draw(t);
		const req = stream("POST", `/v1/executors/${esc(me.name)}/prompt`, body, (chunk) => {
			let got;
			try {
				got = lines.push(chunk).map(l => JSON.parse(l));
			} catch (e) { // a line too long or not JSON: said, and the stream let go
				t.error = cockpit.format(_("The daemon's stream could not be read: $0"), e.message);
				req.close();
				return draw(t);
			}
			for (const l of got) {
				const first = !t.task;
				applyLine(t, l);
				if (first && t.task) { state.session = t.session; state.task = t.task; refreshSessions(); refreshTasks(); }
				if (t.blocks.length && t.blocks[t.blocks.length - 1].kind === "ask") refreshQuestions();
			}
			draw(t);
		});
		state.follow = req;
		req.then(() => resumable(t) ? followOn(t) : draw(t),
			(e) => { if (resumable(t)) return followOn(t); t.error = e.message; t.status = t.status || "failed"; draw(t); })
			.finally(() => { send.disabled = false; prompt.value = ""; refreshSessions().then(refreshProjects).catch(showError); refreshTasks(); refreshQuestions(); });
	}

	// followOn follows a prompt's task after its stream broke off (the
	// daemon went away): from the last event shown, a second apart while
	// no daemon answers, for up to a minute, as agorctl prompt does.
	async function followOn(t) {
		t.blocks.push({ kind: "warning", message: _("The daemon went away; following the task on."), agor: "daemon-away" });
		draw(t);
		for (let i = 0; i < 60 && state.task === t.task && !t.status; i++) {
			const sse = new SSE();
			const req = stream("GET", `/v1/tasks/${esc(t.task)}/events?follow=1&after=${t.last}`, undefined, (chunk) => {
				for (const m of sse.push(chunk)) applySSE(t, m);
				draw(t);
			});
			state.follow = req;
			try {
				await req;
			} catch (e) {
				if (e.status) { t.error = e.message; break; } // the daemon answered: no such task for this page
			}
			if (!t.status) await new Promise(resolve => window.setTimeout(resolve, 1000));
		}
		draw(t);
	}

	// draw shows t: its blocks drawn as they come (transcriptView), its
	// status and summary above them.
	const view = transcriptView(transcriptEl, { after: drawSummary, attach });
	const draw = (t) => view.show(t);

	function drawSummary(t) {
		const s = t.summary;
		fill(summaryEl,
			t.status ? h("p", { "data-agor": "task-status", "data-status": t.status }, statusLabel(t.status), " ",
				s ? cockpit.format(_("$0 messages · tokens in $1 out $2 · session $3"), s.messages, s.tokensIn, s.tokensOut, t.session.slice(0, 8)) : "") : null,
			s && s.error ? alert("danger", s.error) : null,
			(s ? s.warnings : []).map(w => alert("warning", w)),
			t.error ? alert("danger", t.error, { "data-agor": "error" }) : null);
	}

	// refreshQuestions shows the open permission questions with approve
	// and deny (the daemon keeps them: a question asked while the page
	// was away is here too). Drawn again only when they change, so a
	// button is not replaced under the pointer.
	let asked = "";
	async function refreshQuestions() {
		try {
			const { permissions } = await get("/v1/permissions");
			const now = JSON.stringify(permissions);
			if (now === asked) return;
			asked = now;
			fill(questions, permissions.length === 0 ? null : card(_("Permission questions"), permissions.map(p => question(p, decide))));
		} catch (e) { showError(e); }
	}

	async function decide(id, approved) {
		try {
			await call("POST", `/v1/permissions/${esc(id)}`, { approved, reason: approved ? _("approved in Cockpit") : _("denied in Cockpit") });
		} catch (e) { showError(e); }
		refreshQuestions();
	}

	const el = h("div.agor-sessions",
		errors,
		questions,
		card(_("Prompt"), form),
		card(_("Task"), summaryEl, transcriptEl),
		card(_("Sessions"), sessionsBody),
		card(_("Tasks of the selected session"), tasksBody));
	// The browser check's long transcript (cockpit-browser.mjs, step
	// long) draws through here; a person's page has no such hook.
	if (testHooks()) window.agorTest = { replay: (text, chunk) => replay(text, chunk) };

	// replay draws a prompt's stream (NDJSON) as if it came in chunks of
	// chunk bytes, one a frame, and says how long that took.
	async function replay(text, chunk = 8192) {
		stopFollowing();
		state.task = "";
		const t = newTranscript();
		const lines = new Lines();
		const start = performance.now();
		view.stats.draws = view.stats.ms = view.stats.slowest = 0;
		let events = 0;
		for (let i = 0; i < text.length; i += chunk) {
			for (const l of lines.push(text.slice(i, i + chunk))) {
				const line = JSON.parse(l);
				applyLine(t, line);
				if (line.event) events++;
			}
			draw(t);
			await view.drawn();
		}
		const { draws, ms, slowest } = view.stats;
		return { events, blocks: t.blocks.length, nodes: transcriptEl.childElementCount, ms: performance.now() - start, draws, drawing: ms, slowest };
	}

	let timer = null;
	return {
		el,
		show() {
			refreshSessions().then(refreshProjects).catch(showError); refreshTasks(); refreshQuestions();
			timer = timer || setInterval(refreshQuestions, 1500);
		},
		hide() { clearInterval(timer); timer = null; },
	};
}
