/* global cockpit */
// The daemon's HTTP API through Cockpit's bridge, which runs as the
// logged-in person: the daemon knows them by SO_PEERCRED on its socket.

export const SOCKET = "/run/agor/daemon.sock";

let client = null;
function http() {
	if (!client) client = cockpit.http({ unix: SOCKET, headers: { Host: "localhost" } });
	return client;
}

// daemonMessage is the daemon's own wording of an error ({"error":
// {"message"}}), else what Cockpit said.
export function daemonMessage(ex, data) {
	for (const body of [data, ex && ex.message]) {
		try {
			const b = JSON.parse(body);
			if (b && b.error && b.error.message) return b.error.message;
		} catch { /* not the daemon's JSON */ }
	}
	if (ex && ex.problem === "not-found") return cockpit.format(cockpit.gettext("agor-daemon is not running ($0 is missing)"), SOCKET);
	return (ex && (ex.message || ex.problem)) || String(ex);
}

// DaemonError carries the daemon's reason (admin_only, not_found, ...).
export class DaemonError extends Error {
	constructor(ex, data) {
		super(daemonMessage(ex, data));
		this.status = ex && ex.status;
		try { this.reason = JSON.parse(data).error.reason; } catch { this.reason = ""; }
	}
}

// call makes one request and resolves with its decoded JSON body.
export function call(method, path, body, opts = {}) {
	return new Promise((resolve, reject) => {
		const req = http().request({
			method,
			path,
			body: body === undefined ? "" : (typeof body === "string" ? body : JSON.stringify(body)),
			headers: body === undefined ? {} : { "Content-Type": "application/json" },
			binary: opts.binary || false,
		});
		req.then((data) => {
			if (opts.binary || opts.text) return resolve(data);
			try { resolve(data ? JSON.parse(data) : {}); } catch (e) { reject(e); }
		}, (ex, data) => reject(new DaemonError(ex, data)));
	});
}

export const get = (path) => call("GET", path);

// stream makes a request whose reply comes in pieces (NDJSON, SSE):
// onChunk gets each; the promise settles when it ends. close() ends it.
export function stream(method, path, body, onChunk) {
	let seen = "";
	const req = http().request({
		method,
		path,
		body: body === undefined ? "" : JSON.stringify(body),
		headers: body === undefined ? {} : { "Content-Type": "application/json" },
	});
	let failed = false;
	req.response((status) => { failed = status >= 400; });
	req.stream((chunk) => {
		if (failed) seen += chunk;
		else onChunk(chunk);
	});
	const done = new Promise((resolve, reject) => {
		req.then(() => resolve(), (ex, data) => reject(new DaemonError(ex, data || seen)));
	});
	done.close = () => req.close();
	return done;
}

export const esc = encodeURIComponent;
