// Element building for the console: every text goes through text nodes or element properties, never through
// innerHTML, so names, payloads and error texts from the API cannot inject markup.

/** h('td', {className: 'num'}, 'text', node, [more], null): properties are set on the element; on* names are listeners. */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (name === 'dataset') Object.assign(el.dataset, value);
    else if (name in el) el[name] = value;
    else el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces the element's content. */
export function show(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A table from column headings and rows of cells; a heading starting with '#' is a right-aligned number column. */
export function table(headings, rows, props) {
  const numeric = headings.map((title) => title.startsWith('#'));
  return h('table', props,
    h('thead', null, h('tr', null, headings.map((title, i) => h('th', { className: numeric[i] ? 'num' : '' }, numeric[i] ? title.slice(1) : title)))),
    h('tbody', null, rows.map((cells) => h('tr', null, cells.map((cell, i) => h('td', { className: numeric[i] ? 'num' : '' }, cell))))));
}

/** A field for a form: a label around an input (or the given control). */
export function field(label, control) {
  return h('label', null, label, control);
}

export function message(kind, text) {
  return h('div', { className: `msg ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}

export function fields(pairs) {
  return h('dl', { className: 'fields' }, pairs.filter(([, v]) => v !== undefined).map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}

export function pretty(value) {
  return h('pre', null, JSON.stringify(value, null, 2));
}
