// The browser half of cockpit.sh: a real headless Chromium (Debian's, in
// the container) driven by playwright-core logs in to Cockpit as alice,
// bob and root with their passwords and uses agor's page as they would.
// Each step leaves a screenshot in OUT; the run prints what it saw, and
// exits non-zero at the first step that does not show what it must.
// Usage: node cockpit-browser.mjs OUT (env: ALICE_PW, BOB_PW, ROOT_PW;
// STEPS picks steps, e.g. STEPS=usage with EXPECT_BUDGET="month cost").
import { writeFileSync } from "node:fs";
import { chromium } from "playwright-core";

const out = process.argv[2];
const base = "https://127.0.0.1:9090";
const wait = 90_000;
const browser = await chromium.launch({
	executablePath: "/usr/bin/chromium",
	args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
});
let shot = 0;
let current = null; // the page of the step under way, shown when it fails
const step = async (page, name, what) => {
	const path = `${out}/${String(++shot).padStart(2, "0")}-${name}.png`;
	await page.screenshot({ path, fullPage: true });
	console.log(`${path}: ${what}`);
};

// login opens Cockpit, logs in, and returns the page and agor's frame;
// hooks turns on the page's test hooks (localStorage "agor-test-hooks").
async function login(user, password, tab = "", locale = "en-US", hooks = false) {
	const ctx = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1400, height: 1000 }, locale });
	if (hooks) await ctx.addInitScript(() => { try { window.localStorage.setItem("agor-test-hooks", "1"); } catch { /* about:blank has none */ } });
	const page = await ctx.newPage();
	page.setDefaultTimeout(wait);
	page.on("console", (m) => console.log(`  [${user}'s console] ${m.type()}: ${m.text()}`));
	page.on("pageerror", (e) => console.log(`  [${user}'s page error] ${e.message}`));
	current = page;
	// Cockpit's login page is at every address; once in, the shell shows
	// the page asked for (and sets no cookie until then: no navigation
	// between login and shell).
	await page.goto(`${base}/agor${tab ? "#/" + tab : ""}`);
	await page.fill("#login-user-input", user);
	await page.fill("#login-password-input", password);
	await page.click("#login-button");
	const frame = page.frameLocator('iframe[name="cockpit1:localhost/agor"]');
	await frame.locator(`#agor-whoami[data-user="${user}"]`).waitFor();
	return { ctx, page, frame };
}

async function alice() {
	const { ctx, page, frame } = await login("alice", process.env.ALICE_PW);
	await frame.locator("#agor-sessions").waitFor();
	// A person, not an operator, though she may list her own executor.
	await frame.locator('#agor-whoami[data-admin="false"]').waitFor();
	if (await frame.locator("#agor-tab-doctor").count() !== 0) throw new Error("alice is offered the operator's Doctor tab");
	await step(page, "alice-logged-in", "alice is logged in to Cockpit; agor's page shows her sessions");

	// The working directory the page starts at is one of her projects, and
	// the level the packaged configuration gives prompts (workspace)
	// accepts it: asked for here, so that this run's daemon applies it.
	const dir = await defaultDir(frame);
	if (dir === "" || dir === ".") throw new Error(`the page's working directory starts at ${JSON.stringify(dir)}`);
	await frame.locator('select[name="agent"]').selectOption("claude-code");
	await frame.locator('select[name="mode"]').selectOption("default");
	await frame.locator('select[name="sandbox"]').selectOption("workspace");
	await frame.locator('textarea[name="prompt"]').fill("who runs this? write it to cockpit-ran.txt");
	await frame.locator("#agor-send").click();
	const approve = frame.locator('[data-agor="approve"]').first();
	await approve.waitFor();
	const question = (await frame.locator(".agor-question").first().innerText()).replace(/\s+/g, " ");
	console.log(`question in the page: ${question}`);
	// The command as a person reads it, not the tool's JSON: in the
	// questions card and in the transcript's line.
	const command = "id -un > cockpit-ran.txt; pwd";
	const words = (await frame.locator('.agor-question [data-agor="question-tool"]').first().innerText()).replace(/\s+/g, " ");
	if (!words.startsWith(`Bash ${command}`) || /[{}]|"command"/.test(question)) throw new Error(`the question does not read as the command: ${question}`);
	await frame.locator('[data-agor="asked"]').waitFor();
	const asked = (await frame.locator('[data-agor="asked"]').first().innerText()).replace(/\s+/g, " ");
	console.log(`question in the transcript: ${asked}`);
	if (!asked.includes(`Bash wants permission: ${command}`)) throw new Error(`the transcript's question does not read as the command: ${asked}`);
	await step(page, "alice-permission-question", "Claude Code (default mode) asks to run Bash; the question is in the page as the command, with Approve and Deny");

	await approve.click();
	await frame.locator('[data-agor="task-status"][data-status="completed"]').waitFor();
	const result = await frame.locator('[data-agor="tool-result"]').first().innerText();
	const status = await frame.locator('[data-agor="task-status"]').innerText();
	console.log(`tool output in the page: ${result.replace(/\s+/g, " ")}`);
	console.log(`task status in the page: ${status.replace(/\s+/g, " ")}`);
	if (!/completed/.test(status)) throw new Error(`status shows ${status}`);
	// Completed is not enough (a turn whose tool was denied completes too):
	// the page shows the approval, and the tool's own output (pwd).
	await frame.locator('[data-agor="decided"][data-approved="true"]').waitFor({ timeout: 5000 });
	if (!/\/home\/alice/.test(result)) throw new Error(`the tool's output is not pwd's: ${result}`);
	await step(page, "alice-completed", `approved: the tool's output and "completed" are in the page; it ran in ${dir}, the page's default, under workspace`);

	// A prompt the daemon refuses: its words in the page, as it wrote them
	// (the home, typed in: the one directory the page never offers).
	await frame.locator('select[name="sandbox"]').selectOption("workspace");
	await frame.locator('input[name="cwd"]').fill(".");
	await frame.locator('textarea[name="prompt"]').fill("in a workspace at home");
	await frame.locator("#agor-send").click();
	const refused = frame.locator('#agor-task-status [data-agor="error"]');
	await refused.waitFor();
	console.log(`daemon error in the page: ${(await refused.innerText()).trim()}`);
	await step(page, "alice-daemon-error", "a prompt the daemon refuses (workspace sandbox at the home): the daemon's words in the page");
	await frame.locator('select[name="sandbox"]').selectOption("");

	await frame.locator("#agor-tab-terminal").click();
	const screen = frame.locator("#agor-terminal .xterm-rows");
	await screen.waitFor();
	await frame.locator("#agor-terminal").filter({ hasText: "alice@" }).waitFor();
	await frame.locator("#agor-terminal .xterm-helper-textarea").focus();
	await page.keyboard.type("id -un\n");
	await waitRows(screen, /^alice\s*$/m);
	console.log(`terminal rows: ${(await screen.innerText()).split("\n").filter(l => l.trim()).slice(-3).join(" | ")}`);
	// "Your terminals" lists the terminal open beside it, once agorctl
	// has attached it: here, attached.
	const id = /terminal (term_[0-9a-f]+) of alice/.exec(await screen.innerText())[1];
	const listed = frame.locator(`#agor-terminal-list tr[data-terminal="${id}"]`);
	await frame.locator(`#agor-terminal-list tr[data-terminal="${id}"][data-here="true"][data-attached="true"]`).waitFor({ timeout: 10_000 });
	console.log(`your terminals: ${(await listed.innerText()).replace(/\s+/g, " ")}`);
	await step(page, "alice-terminal", "a terminal in the page runs agorctl terminal; id -un shows alice; \"Your terminals\" lists it as here");

	// Detach leaves the shell running; Attach comes back to the same one.
	await page.keyboard.type("echo shell-$$\n");
	await waitRows(screen, /^shell-\d+\s*$/m);
	const pid = /^shell-(\d+)\s*$/m.exec(await screen.innerText())[1];
	await frame.locator("#agor-terminal-detach").click();
	await frame.locator('[data-agor="terminal-ended"]').waitFor();
	await frame.locator(`[data-agor="attach"][data-terminal="${id}"]`).click();
	await frame.locator("#agor-terminal .xterm-helper-textarea").focus();
	await page.keyboard.type("echo again-$$\n");
	await waitRows(screen, /^again-\d+\s*$/m);
	const again = /^again-(\d+)\s*$/m.exec(await screen.innerText())[1];
	console.log(`terminal: shell pid ${pid} before detach, ${again} after attach`);
	if (pid !== again) throw new Error(`attached to another shell (${pid} before, ${again} after)`);
	await frame.locator(`#agor-terminal-list tr[data-terminal="${id}"][data-here="true"]`).waitFor({ timeout: 10_000 });
	console.log(`your terminals after attach: ${(await listed.innerText()).replace(/\s+/g, " ")}`);
	await step(page, "alice-terminal-reattached", "detached and attached again: the same shell (same $$), listed as here again");

	await frame.locator("#agor-tab-executors").click();
	await frame.locator('#agor-executors table').waitFor();
	console.log(`alice's usage: ${(await frame.locator("#agor-executors tbody").innerText()).replace(/\s+/g, " ")}`);
	await step(page, "alice-usage", "alice's own executor: CPU, memory, tasks");
	await ctx.close();
}

// resume: alice's prompt is in an 8 s command when the daemon restarts
// (cockpit.sh restarts it once this step writes OUT/resume-ready): the
// page says the daemon went away, follows the task on, and shows the
// command's output once and "completed".
async function resume() {
	const { ctx, page, frame } = await login("alice", process.env.ALICE_PW);
	await frame.locator("#agor-sessions").waitFor();
	await defaultDir(frame);
	await frame.locator('select[name="agent"]').selectOption("claude-code");
	await frame.locator('select[name="mode"]').selectOption("bypassPermissions");
	await frame.locator('textarea[name="prompt"]').fill("take your time across a restart");
	await frame.locator("#agor-send").click();
	await frame.locator('[data-agor="tool"]').first().waitFor();
	await step(page, "alice-resume-running", "alice's agent runs an 8 s command; the daemon restarts now");
	writeFileSync(`${out}/resume-ready`, "");
	await frame.locator('[data-agor="daemon-away"]').waitFor();
	await frame.locator('[data-agor="task-status"][data-status="completed"]').waitFor();
	const results = await frame.locator('[data-agor="tool-result"]').allInnerTexts();
	console.log(`after the restart the page shows ${results.length} tool result(s): ${results.join(" | ").replace(/\s+/g, " ")}`);
	if (results.length !== 1 || !/resumed/.test(results[0])) throw new Error(`want the command's output once, got ${JSON.stringify(results)}`);
	await step(page, "alice-resumed", "the page said the daemon went away, followed the task on, and shows its output once and completed");
	await ctx.close();
}

// usage: alice's Usage tab (STEPS=usage; not in the default run: the
// gateway checks run it once she has made model requests). Prints the
// rows and budget lines the page shows; wants a row of hers and no one
// else's, and with EXPECT_BUDGET="PERIOD KIND" (e.g. "month cost") her
// bound of that period and kind, in EXPECT_BUDGET_STATE (ok, warning,
// danger) if set. USAGE_PERIOD=day shows today rather than this month.
async function usage() {
	const period = process.env.USAGE_PERIOD || "month";
	const { ctx, page, frame } = await login("alice", process.env.ALICE_PW);
	await frame.locator("#agor-tab-usage").click();
	await frame.locator(`[data-agor="period"][data-period="${period}"]`).click();
	const shown = frame.locator(`#agor-usage[data-period="${period}"]`);
	await shown.locator('table, [data-agor="gateway-off"], [data-agor="error"]').first().waitFor();
	if (await shown.locator("table").count() === 0) throw new Error(`no usage table: ${(await shown.innerText()).trim()}`);
	// Her requests are in the ledger once they end; the tab asks again every 30 s.
	await shown.locator('tr[data-user="alice"][data-model]').first().waitFor();
	const rows = shown.locator("tr[data-user][data-model]");
	for (let i = 0; i < await rows.count(); i++) console.log(`usage row: ${(await rows.nth(i).innerText()).replace(/\s+/g, " ")}`);
	console.log(`usage total: ${(await shown.locator('[data-agor="usage-total"]').innerText()).replace(/\s+/g, " ")}`);
	const others = await shown.locator('tr[data-user][data-model]:not([data-user="alice"])').count();
	if (others !== 0) throw new Error(`alice sees ${others} rows not hers`);
	const bars = shown.locator('[data-agor="budget"]');
	for (let i = 0; i < await bars.count(); i++) {
		const b = bars.nth(i);
		console.log(`budget (${await b.getAttribute("data-state")}): ${(await b.locator('[data-agor="budget-line"]').innerText()).trim()}`);
	}
	if (process.env.EXPECT_BUDGET) {
		const [p, kind] = process.env.EXPECT_BUDGET.split(" ");
		const state = process.env.EXPECT_BUDGET_STATE ? `[data-state="${process.env.EXPECT_BUDGET_STATE}"]` : "";
		const want = shown.locator(`[data-agor="budget"][data-user="alice"][data-period="${p}"][data-kind="${kind}"]${state}`);
		if (await want.count() !== 1) throw new Error(`no budget line for alice's ${process.env.EXPECT_BUDGET}${state}`);
	}
	await step(page, `alice-model-usage-${period}`, `alice's model usage (${period}): her rows, the total and her budget bars`);
	await ctx.close();
}

// long: a turn of 5,000 events (STEPS=long; not in the default run)
// drawn by alice's page through its own path (applyLine, the transcript
// view, a chunk of the stream a frame) by the page's test hook: prints
// how long drawing took and a scroll to the end, with screenshots.
async function long() {
	const { ctx, page, frame } = await login("alice", process.env.ALICE_PW, "", "en-US", true);
	await frame.locator("#agor-sessions").waitFor();
	const transcript = frame.locator("#agor-transcript");
	const n = Number(process.env.LONG_EVENTS || 5000);
	const got = await transcript.evaluate((_el, text) => {
		if (!window.agorTest) throw new Error("the page has no test hook");
		return window.agorTest.replay(text, 4096);
	}, longTurn(n));
	console.log(`long transcript: ${got.events} events, ${got.blocks} blocks (${got.nodes} drawn) in ${got.ms.toFixed(0)} ms over ${got.draws} frames; ` +
		`drawing took ${got.drawing.toFixed(0)} ms, the slowest frame's ${got.slowest.toFixed(1)} ms`);
	if (got.events !== n || got.nodes !== got.blocks) throw new Error(`want ${n} events drawn as their blocks, got ${JSON.stringify(got)}`);
	await frame.locator('[data-agor="task-status"][data-status="completed"]').waitFor();
	await step(page, "alice-long-transcript", `a turn of ${n} events drawn in the page, following its end`);
	// From the top to the end at once, then through it a screen a frame.
	const scroll = await transcript.evaluate(async (el) => {
		const nextFrame = () => new Promise(r => requestAnimationFrame(() => r()));
		el.scrollTop = 0;
		await nextFrame();
		await nextFrame();
		let start = performance.now();
		el.scrollTop = el.scrollHeight;
		await nextFrame();
		const toEnd = performance.now() - start;
		const atEnd = el.scrollTop + el.clientHeight >= el.scrollHeight - 1;
		el.scrollTop = 0;
		await nextFrame();
		let slowest = 0;
		let screens = 0;
		start = performance.now();
		if (el.clientHeight === 0) throw new Error("the transcript is not shown");
		while (el.scrollTop + el.clientHeight < el.scrollHeight - 1 && screens < 10_000) {
			const t = performance.now();
			el.scrollTop += el.clientHeight;
			await nextFrame();
			slowest = Math.max(slowest, performance.now() - t);
			screens++;
		}
		return { toEnd, atEnd, through: performance.now() - start, screens, slowest, height: el.scrollHeight };
	});
	console.log(`long transcript: scrolled to the end (${scroll.height} px) in ${scroll.toEnd.toFixed(1)} ms; ` +
		`through it, ${scroll.screens} screens a frame each, in ${scroll.through.toFixed(0)} ms, the slowest frame ${scroll.slowest.toFixed(1)} ms`);
	if (!scroll.atEnd) throw new Error("the transcript did not scroll to its end");
	const last = (await transcript.locator('[data-agor="tool-result"]').last().innerText()).replace(/\s+/g, " ");
	console.log(`long transcript: its last tool result: ${last}`);
	await step(page, "alice-long-transcript-end", "the long transcript scrolled through to its end");
	await ctx.close();
}

// longTurn is a prompt's stream (NDJSON) of n events as an agent sends
// them: thinking, text in small deltas, tool calls and their results, a
// question now and then, and the result.
function longTurn(n) {
	const out = [{ task_id: "long", session_id: "long" }];
	let seq = 0;
	const add = (type, data) => {
		if (seq < n) out.push({ event: { task_id: "long", sequence: ++seq, timestamp: 0, event_type: type, event_data: { type, data } } });
	};
	for (let i = 0; seq < n; i++) {
		add("thinking_delta", { text: `step ${i}: ` });
		add("message_stop", {});
		for (let j = 0; j < 8; j++) add("text_delta", { text: `word${j} of step ${i} ` });
		add("message_stop", {});
		const id = `u${i}`;
		if (i % 3 === 0) add("tool_call", { tool_use_id: id, tool_name: "Edit", tool_input: { file_path: `src/f${i}.go`, old_string: `x := ${i}`, new_string: `x := ${i + 1}` } });
		else add("tool_call", { tool_use_id: id, tool_name: "Bash", tool_input: { command: `grep -n step${i} *.go`, description: `find step ${i}` } });
		if (i % 50 === 0) {
			add("permission_asked", { tool_use_id: id, tool_name: "Bash", tool_input: { command: `rm -f tmp${i}` } });
			add("permission_decided", { tool_name: "Bash", approved: true, reason: "ok" });
		}
		add("tool_result", { tool_use_id: id, output: `f${i}.go:${i}: step${i}\n`.repeat(3), is_error: i % 17 === 0 });
	}
	out.push({ result: { status: "completed", message_count: seq, token_usage: { input_tokens: 1, output_tokens: 1 } } });
	return out.map(l => JSON.stringify(l)).join("\n") + "\n";
}

// defaultDir waits for the prompt box to have looked for her projects
// and says the working directory it starts at (cockpit.sh reads the line).
async function defaultDir(frame) {
	const cwd = frame.locator('input[name="cwd"][data-projects]');
	await cwd.waitFor();
	const dir = await cwd.inputValue();
	console.log(`working directory, the page's default: ${dir} (of ${await cwd.getAttribute("data-projects")} projects)`);
	return dir;
}

async function waitRows(screen, re) {
	for (let i = 0; i < 150; i++) {
		if (re.test(await screen.innerText())) return;
		await new Promise(r => setTimeout(r, 200));
	}
	throw new Error(`the terminal never showed ${re}: ${await screen.innerText()}`);
}

async function bob() {
	// bob reads German: the page's strings through Cockpit's translations (po.de.js).
	const { ctx, page, frame } = await login("bob", process.env.BOB_PW, "", "de-DE");
	await frame.locator('#agor-whoami[data-admin="false"]').waitFor();
	await frame.locator("#agor-sessions").waitFor();
	const tabs = (await frame.locator(".pf-v5-c-tabs__list").innerText()).replace(/\s+/g, " ");
	console.log(`bob's tabs (de-DE): ${tabs}`);
	if (!/Sitzungen/.test(tabs)) throw new Error("the page is not in German");
	await frame.locator('#agor-sessions tr[data-user="bob"]').first().waitFor();
	const alices = await frame.locator('#agor-sessions tr[data-user="alice"]').count();
	const bobs = await frame.locator('#agor-sessions tr[data-user="bob"]').count();
	const rows = await frame.locator("#agor-sessions tr[data-session]").count();
	console.log(`bob's page lists ${rows} sessions: ${bobs} his, ${alices} alice's`);
	if (alices !== 0 || bobs !== rows) throw new Error("bob sees sessions not his");
	await step(page, "bob-sessions", "bob is logged in: his own session is listed, none of alice's");
	// His files: the listing starts his executor (as bob), which root sees next.
	await frame.locator("#agor-tab-files").click();
	await frame.locator("#agor-files table").waitFor();
	await frame.locator('input[type="file"]').setInputFiles({ name: "from-browser.txt", mimeType: "text/plain", buffer: Buffer.from("uploaded by bob's browser\n") });
	const entry = frame.locator("#agor-files button", { hasText: /^from-browser\.txt$/ });
	await entry.waitFor();
	await entry.click();
	await frame.locator("#agor-file-view pre").filter({ hasText: "uploaded by bob's browser" }).waitFor();
	const [download] = await Promise.all([page.waitForEvent("download"),
		frame.locator("#agor-files tr", { has: frame.locator("button", { hasText: /^from-browser\.txt$/ }) }).locator('[data-agor="download"]').click()]);
	const got = (await streamText(await download.createReadStream()));
	console.log(`bob's files: uploaded from-browser.txt, viewed it, downloaded ${download.suggestedFilename()}: ${JSON.stringify(got)}`);
	if (got !== "uploaded by bob's browser\n") throw new Error("the download differs from the upload");
	await step(page, "bob-files", "bob's files through the daemon: his upload listed and viewed");
	await ctx.close();
}

async function streamText(st) {
	const parts = [];
	for await (const c of st) parts.push(c);
	return Buffer.concat(parts).toString();
}

async function root() {
	const { ctx, page, frame } = await login("root", process.env.ROOT_PW, "executors");
	await frame.locator('#agor-whoami[data-admin="true"]').waitFor();
	await frame.locator('#agor-executors tr[data-executor="alice"]').waitFor();
	await frame.locator('#agor-executors tr[data-executor="bob"]').waitFor();
	for (const u of ["alice", "bob"]) {
		console.log(`root's executors row: ${(await frame.locator(`#agor-executors tr[data-executor="${u}"]`).innerText()).replace(/\s+/g, " ")}`);
	}
	await step(page, "root-executors", "root (an operator) sees alice's and bob's executors with CPU, memory and tasks");
	// Stop takes bob's units down (his row goes: nothing of his is loaded);
	// Start by name brings them back.
	const bobRow = frame.locator('#agor-executors tr[data-executor="bob"]');
	await bobRow.locator("button", { hasText: "Stop" }).click();
	await bobRow.waitFor({ state: "detached" });
	console.log("root stopped bob's executor: his row is gone");
	await step(page, "root-stopped-bob", "root stopped bob's executor from the page");
	await frame.locator('input[name="start-user"]').fill("bob");
	await frame.locator("#agor-start-executor").click();
	await bobRow.locator("button", { hasText: "Stop" }).waitFor();
	console.log(`root started bob's executor: ${(await bobRow.innerText()).replace(/\s+/g, " ")}`);
	await step(page, "root-started-bob", "root started bob's executor again by name");
	await frame.locator("#agor-tab-sessions").click();
	await frame.locator('#agor-sessions tr[data-user="alice"]').first().waitFor();
	await frame.locator('#agor-sessions tr[data-user="bob"]').first().waitFor();
	await step(page, "root-sessions", "root sees alice's and bob's sessions");
	await frame.locator("#agor-tab-audit").click();
	await frame.locator("#agor-audit table").waitFor();
	await step(page, "root-audit", "root sees the audit trail");
	await frame.locator("#agor-tab-doctor").click();
	await frame.locator("#agor-doctor").filter({ hasNotText: "Running agorctl doctor" }).waitFor();
	await step(page, "root-doctor", "root sees what agorctl doctor finds");
	await ctx.close();
}

// carol is no root: an operator by api.admin_group.
async function carol() {
	const { ctx, page, frame } = await login("carol", process.env.CAROL_PW, "executors");
	await frame.locator('#agor-whoami[data-admin="true"]').waitFor();
	await frame.locator('#agor-executors tr[data-executor="alice"]').waitFor();
	await frame.locator('#agor-executors tr[data-executor="bob"]').waitFor();
	console.log(`carol (agor-admins) sees ${await frame.locator("#agor-executors tr[data-executor]").count()} executors`);
	await step(page, "carol-operator-executors", "carol, in api.admin_group, is an operator too: every person's executors");
	await ctx.close();
}

// interactive: alice's Claude Code UI, opened with agorctl agent in her
// shell (cockpit.sh), is a session of hers in the page: listed, its task
// naming the terminal its UI runs in (TERMINAL), and Attach shows that UI
// in the Terminal tab, where what she types is answered; Detach leaves
// it running. (STEPS=interactive, SESSION=its id.)
async function interactive() {
	const session = process.env.SESSION;
	const want = process.env.TERMINAL;
	const { ctx, page, frame } = await login("alice", process.env.ALICE_PW);
	const row = frame.locator(`#agor-sessions tr[data-session="${session}"]`);
	await row.waitFor();
	console.log(`her session in the page: ${(await row.innerText()).replace(/\s+/g, " ")}`);
	await row.click();
	const task = frame.locator("#agor-tasks tr[data-task]").last();
	await task.waitFor();
	await task.click();
	const note = frame.locator(`[data-agor="ui-terminal"][data-terminal="${want}"]`);
	await note.waitFor();
	console.log(`its task: ${(await note.innerText()).replace(/\s+/g, " ").trim()}`);
	await step(page, "alice-interactive-session", "alice's interactive session (agorctl agent in her shell) in the page: its task names the terminal its UI runs in");
	await note.locator('[data-agor="attach-ui"]').click();
	const term = frame.locator("#agor-terminal");
	await term.filter({ hasText: "for shortcuts" }).waitFor();
	// Attached, the list says; whether it marks it "here" is printed, not
	// judged (on Debian 13 once it did not, with the UI drawn and answering
	// in the page: not understood yet, see the closing note of issue 50).
	const listed = frame.locator(`#agor-terminal-list tr[data-terminal="${want}"][data-attached="true"]`);
	await listed.waitFor({ timeout: 10_000 });
	console.log(`your terminals: ${(await listed.innerText()).replace(/\s+/g, " ")}; here: ${await listed.getAttribute("data-here")}`);
	await frame.locator("#agor-terminal .xterm-helper-textarea").focus();
	await page.keyboard.type("Remember the word HERON.");
	await term.filter({ hasText: "HERON" }).waitFor();
	await page.keyboard.press("Enter");
	await term.filter({ hasText: "Noted" }).waitFor();
	const rows = (await frame.locator("#agor-terminal .xterm-rows").innerText()).split("\n").filter(l => l.trim());
	console.log(`the UI in the page: ${rows.slice(-8).join(" | ").replace(/\s+/g, " ")}`);
	await step(page, "alice-interactive-attached", "Attach: Claude Code's own UI in the page's terminal, answering what alice typed there");
	await frame.locator("#agor-terminal-detach").click();
	await frame.locator('[data-agor="terminal-ended"]').waitFor();
	await frame.locator(`#agor-terminal-list tr[data-terminal="${want}"][data-attached="false"]`).waitFor({ timeout: 10_000 });
	await step(page, "alice-interactive-detached", "detached in the page: the UI runs on, listed unattached");
	await ctx.close();
}

try {
	for (const who of (process.env.STEPS || "alice bob root carol").split(" ")) await { alice, bob, root, carol, resume, long, usage, interactive }[who]();
} catch (e) {
	if (current) {
		await current.screenshot({ path: `${out}/failed.png`, fullPage: true }).catch(() => {});
		for (const f of current.frames()) console.log(`  frame ${f.name()} ${f.url()}: ${(await f.locator("body").innerText().catch(() => "")).slice(0, 800)}`);
	}
	throw e;
} finally {
	await browser.close();
}
