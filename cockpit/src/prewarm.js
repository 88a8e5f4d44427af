// Pre-warming from the prompt box: while a person writes a prompt, the
// daemon starts the agent the prompt will run on (POST
// /v1/executors/{user}/prewarm), so the prompt does not wait for the
// CLI's start. A hint only: a failure is not shown.

// prewarmer returns schedule(body): body is sent after delay ms without a
// newer one (typing, changing options), and not again while it is the
// last one sent (the daemon keeps a pre-warm for a while; a new body,
// other options, is a new pre-warm).
export function prewarmer(send, delay = 500, timers = globalThis) {
	let timer = null;
	let last = "";
	return function schedule(body) {
		const key = JSON.stringify(body);
		if (timer !== null) timers.clearTimeout(timer);
		timer = timers.setTimeout(() => {
			timer = null;
			if (key === last) return;
			last = key;
			Promise.resolve(send(body)).catch(() => { last = ""; });
		}, delay);
	};
}

// prewarmBody is the prompt's options without the prompt: what the
// prompt box would send.
export function prewarmBody(o) {
	const b = { agentic_tool: o.tool, cwd: o.cwd || ".", permission_mode: o.mode };
	if (o.sandbox) b.sandbox = o.sandbox;
	if (o.session) b.session_id = o.session;
	if (o.env) b.environment = o.env;
	return b;
}
