// Just enough of a browser for the page's modules under node's test
// runner: a DOM of elements, text and fragments (no layout, no
// selectors), and Cockpit's gettext and format. Import it before the
// page's modules; it counts the nodes made (made.elements, made.texts).

export const made = { elements: 0, texts: 0 };

class Node {
	constructor(type) { this.nodeType = type; this.parentNode = null; this.childNodes = []; }
	get firstChild() { return this.childNodes[0] ?? null; }
	get lastChild() { return this.childNodes[this.childNodes.length - 1] ?? null; }
	get textContent() { return this.childNodes.map(c => c.textContent).join(""); }
	append(...kids) {
		for (const k of kids) {
			const add = k instanceof Node ? k : new Text(String(k));
			if (add.nodeType === 11) {
				for (const c of add.childNodes.splice(0)) { c.parentNode = this; this.childNodes.push(c); }
				continue;
			}
			if (add.parentNode) add.parentNode.childNodes.splice(add.parentNode.childNodes.indexOf(add), 1);
			add.parentNode = this;
			this.childNodes.push(add);
		}
	}
	replaceChildren(...kids) {
		for (const c of this.childNodes) c.parentNode = null;
		this.childNodes = [];
		this.append(...kids);
	}
}

class Text extends Node {
	constructor(data) { super(3); this.data = data; made.texts++; }
	get textContent() { return this.data; }
	appendData(s) { this.data += s; }
}

class Element extends Node {
	constructor(tag) {
		super(1);
		this.tagName = tag.toUpperCase();
		this.className = "";
		this.attributes = new Map();
		this.listeners = {};
		this.scrollTop = 0;
		this.scrollHeight = 0;
		this.clientHeight = 0;
		made.elements++;
	}
	get children() { return this.childNodes.filter(c => c.nodeType === 1); }
	get childElementCount() { return this.children.length; }
	setAttribute(k, v) { this.attributes.set(k, String(v)); }
	getAttribute(k) { return this.attributes.has(k) ? this.attributes.get(k) : null; }
	addEventListener(type, f) { (this.listeners[type] ||= []).push(f); }
	click() { for (const f of this.listeners.click || []) f({ preventDefault() {} }); }
}

class Fragment extends Node {
	constructor() { super(11); }
}

globalThis.Node = Node;
globalThis.document = {
	createElement: (tag) => new Element(tag),
	createTextNode: (s) => new Text(s),
	createDocumentFragment: () => new Fragment(),
};
globalThis.cockpit = {
	gettext: (s) => s,
	format: (f, ...args) => f.replace(/\$([0-9])/g, (_m, i) => String(args[i] ?? "")),
};

// all is every element under el (el too) for which pred holds.
export function all(el, pred) {
	const out = [];
	const walk = (n) => {
		if (n.nodeType === 1 && pred(n)) out.push(n);
		n.childNodes.forEach(walk);
	};
	walk(el);
	return out;
}

// agor is every element under el whose data-agor is name.
export const agor = (el, name) => all(el, n => n.getAttribute("data-agor") === name);
