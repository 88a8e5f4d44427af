// h builds an element: h("button.pf-v5-c-button.pf-m-primary", {onclick}, "Send").
export function h(spec, attrs, ...kids) {
	const [tag, ...classes] = spec.split(".");
	const el = document.createElement(tag || "div");
	if (classes.length) el.className = classes.join(" ");
	if (attrs && (typeof attrs !== "object" || attrs instanceof Node || Array.isArray(attrs))) {
		kids.unshift(attrs);
		attrs = null;
	}
	for (const [k, v] of Object.entries(attrs || {})) {
		if (v === undefined || v === null || v === false) continue;
		if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
		else if (k === "class") el.className += " " + v;
		else if (k === "value") el.value = v;
		else el.setAttribute(k, v === true ? "" : v);
	}
	append(el, kids);
	return el;
}

function append(el, kids) {
	for (const k of kids.flat(Infinity)) {
		if (k === undefined || k === null || k === false) continue;
		el.append(k instanceof Node ? k : document.createTextNode(String(k)));
	}
}

// fill replaces el's children.
export function fill(el, ...kids) {
	el.replaceChildren();
	append(el, kids);
	return el;
}

export const button = (label, onclick, kind = "secondary", attrs = {}) =>
	h("button.pf-v5-c-button.pf-m-" + kind, { type: "button", onclick: onclick || undefined, ...attrs }, label);

export function card(title, ...body) {
	return h("article.pf-v5-c-card", [
		h("div.pf-v5-c-card__title", h("h2.pf-v5-c-card__title-text", title)),
		h("div.pf-v5-c-card__body", body),
	]);
}

export function alert(kind, title, attrs = {}) {
	return h("div.pf-v5-c-alert.pf-m-inline.pf-m-" + kind, { role: "alert", ...attrs },
		h("p.pf-v5-c-alert__title", title));
}

export function label(text, color) {
	return h("span.pf-v5-c-label" + (color ? ".pf-m-" + color : ""), h("span.pf-v5-c-label__content", text));
}

export function table(heads, rows, attrs = {}) {
	return h("table.pf-v5-c-table.pf-m-compact.pf-m-grid-md", { role: "grid", ...attrs },
		h("thead.pf-v5-c-table__thead", h("tr.pf-v5-c-table__tr", heads.map(t => h("th.pf-v5-c-table__th", { scope: "col" }, t)))),
		h("tbody.pf-v5-c-table__tbody", rows.map(r => r instanceof Node ? r : h("tr.pf-v5-c-table__tr", r.map((c, i) => h("td.pf-v5-c-table__td", { "data-label": heads[i] }, c)))))
	);
}

export function field(text, control) {
	return h("div.pf-v5-c-form__group", [
		h("div.pf-v5-c-form__group-label", h("label.pf-v5-c-form__label", h("span.pf-v5-c-form__label-text", text))),
		h("div.pf-v5-c-form__group-control", h("span.pf-v5-c-form-control", control)),
	]);
}

export function select(name, options, value) {
	return h("select", { name, "aria-label": name }, options.map(([v, t]) => h("option", { value: v, selected: v === value }, t)));
}
