// Reading an answer through the field lists the panel modules export (FIGURE3_ROW_FIELDS,
// DECISION_FIELDS, ...), so that each list is exactly what its panel reads:
// - a field a list names that the answer lacks stops the panel's drawing with MissingField;
//   the board keeps what it drew and marks the panels "could not refresh: the answer has
//   no <where>.<field>" (dom.panelError), so a renamed field shows on the page instead of
//   drawing "undefined" or a zero;
// - reading a field the list does not name throws UnlistedField, so a panel that starts to
//   read a new field fails its node tests until the field is added to its list.

export class MissingField extends Error {
  constructor(where, field) {
    super(`the answer has no ${where ? where + "." : ""}${field}`);
    this.name = "MissingField";
    this.where = where;
    this.field = field;
  }
}

export class UnlistedField extends Error {
  constructor(where, field) {
    super(`the board read ${where ? where + "." : ""}${field}, which its field list does not name`);
    this.name = "UnlistedField";
    this.where = where;
    this.field = field;
  }
}

// The fields `names` of `obj` (present, though they may be null), as an object that has
// only those and refuses to read any other; `where` names `obj` in errors
// ("figure3.arms[2]"; "" for the answer itself).
export function pick(obj, names, where) {
  if (obj === null || typeof obj !== "object" || Array.isArray(obj)) throw new TypeError(`the answer${where ? "'s " + where : ""} is not an object`);
  const out = {};
  for (const name of names) {
    if (!Object.hasOwn(obj, name)) throw new MissingField(where, name);
    out[name] = obj[name];
  }
  return new Proxy(out, {
    get(target, key, receiver) {
      // symbols and Object's own members (toString, ...) are the language's, not the answer's
      if (typeof key === "string" && !Object.hasOwn(target, key) && !(key in Object.prototype)) throw new UnlistedField(where, key);
      return Reflect.get(target, key, receiver);
    },
  });
}

// pick() of every object of a list (a field of the answer that must be a list).
export function pickEach(list, names, where) {
  if (!Array.isArray(list)) throw new TypeError(`the answer's ${where} is not a list`);
  return list.map((obj, i) => pick(obj, names, `${where}[${i}]`));
}

// Distinct names of several lists, in order: the fields a set of panels reads.
export function union(...lists) {
  return [...new Set(lists.flat())];
}
