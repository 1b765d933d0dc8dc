// lowprec lesson components, run in the browser: predictions, exercises, locked widgets and
// explanations, and the bin challenge (their Python side is lowprec/app/exercises.py and
// lowprec/app/widgets/bin_challenge.py; each passes its data as one strict-JSON string, `spec`).
//
// Everything a learner is told comes precomputed from Python (answers, decode tables, verdicts);
// this file only parses a response and compares. The comparison rules are those of
// lowprec.course.lesson_blocks.check_response, and a test runs `checkResponse` against it on a table
// of responses. Progress lives in localStorage under "lowprec-progress": a JSON object mapping
// "<lesson-slug>/<block-id>" to "correct" | "incorrect" | "answered"; every write dispatches
// `window` event "lowprec-progress" (detail: {key, result}).
//
// No imports: the module is inlined in the page (served or exported), so it never fetches.

export const PROGRESS_KEY = "lowprec-progress"
export const PROGRESS_EVENT = "lowprec-progress"

// ---------------------------------------------------------------------------------------------
// parsing and checking (mirrors lesson_blocks.parse_response / check_response)
// ---------------------------------------------------------------------------------------------

const WS_EDGES = /^[ \t\n\r\v\f]+|[ \t\n\r\v\f]+$/g  // ASCII whitespace, as lesson_blocks strips
const DEC_RE = /^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/
const SPECIAL_RE = /^([+-]?)(?:inf|infinity|nan)$/i
const HEX_FLOAT_RE = /^([+-]?)0[xX]([0-9a-fA-F]*)\.?([0-9a-fA-F]*)[pP]([+-]?[0-9]+)$/

export function strip(text) {
  return String(text).replace(WS_EDGES, "")
}

// A strict-JSON number: lowprec.strictjson writes non-finite numbers as "nan", "inf", "-inf".
export function jsonNumber(v) {
  if (typeof v === "number") return v
  if (v === "nan") return NaN
  if (v === "inf") return Infinity
  if (v === "-inf") return -Infinity
  return NaN
}

function pow2(k) {
  // 2^k exactly, for -1074 <= k <= 1023 (built from its bits: no pow rounding)
  const buf = new DataView(new ArrayBuffer(8))
  if (k >= -1022) {
    buf.setUint32(0, (k + 1023) << 20)
    buf.setUint32(4, 0)
  } else {
    const bit = k + 1074  // position in the 52-bit fraction
    buf.setUint32(0, bit >= 32 ? 1 << (bit - 32) : 0)
    buf.setUint32(4, bit < 32 ? (2 ** bit) >>> 0 : 0)
  }
  return buf.getFloat64(0)
}

function bitLength(n) {
  return n === 0n ? 0 : n.toString(2).length
}

// float.fromhex, correctly rounded (nearest-even, subnormals included); overflow gives ±Infinity
export function parseHexFloat(text) {
  const m = HEX_FLOAT_RE.exec(text)
  if (m === null || (m[2] + m[3]).length === 0) return null
  const sign = m[1] === "-" ? -1 : 1
  const mant = BigInt("0x" + (m[2] + m[3] || "0"))
  if (mant === 0n) return sign * 0
  const e = BigInt(m[4]) - 4n * BigInt(m[3].length)  // value = mant × 2^e
  const L = bitLength(mant)
  const top = BigInt(L - 1) + e  // exponent of the leading bit
  if (top > 1023n) return sign * Infinity
  if (top < -1076n) return sign * 0  // below half the smallest subnormal
  const topN = Number(top)
  const precision = topN >= -1022 ? 53 : topN + 1075  // bits kept (fewer for subnormals)
  const shift = L - precision
  let q = mant
  let exp = Number(e)
  if (shift > 0) {
    const s = BigInt(shift)
    q = mant >> s
    const rest = mant - (q << s)
    const half = 1n << (s - 1n)
    if (rest > half || (rest === half && (q & 1n) === 1n)) q += 1n
    exp += shift
  }
  if (q === 0n) return sign * 0
  // q < 2^54 and exp keeps q × 2^exp exact; rounding up may carry to 2^1024 (overflow)
  const qb = bitLength(q)
  if (exp + qb - 1 > 1023) return sign * Infinity
  return sign * Number(q) * pow2(exp)  // exact: -1074 <= exp <= 1023 and q × 2^exp is a double
}

export function parseNumber(text) {
  if (typeof text !== "string") return null
  const t = strip(text).replaceAll("\u2212", "-").replaceAll("_", "")
  if (t === "") return null
  if (HEX_FLOAT_RE.test(t)) return parseHexFloat(t)
  const special = SPECIAL_RE.exec(t)
  if (special !== null) {
    const word = t.replace(/^[+-]/, "").toLowerCase()
    if (word === "nan") return NaN
    return special[1] === "-" ? -Infinity : Infinity
  }
  if (DEC_RE.test(t)) return Number(t)
  return null
}

export function parseCode(text, bits) {
  if (typeof text !== "string") return null
  const t = strip(text).replaceAll(" ", "").replaceAll("_", "")
  let v
  if (/^0[xX][0-9a-fA-F]+$/.test(t)) v = BigInt(t.toLowerCase())
  else if (/^[01]+$/.test(t) && t.length === bits) v = BigInt("0b" + t)
  else if (/^0[bB][01]+$/.test(t)) v = BigInt("0b" + t.slice(2))
  else return null
  return v < (1n << BigInt(bits)) ? Number(v) : null
}

// The parts of an order or classify response: split at "|", ASCII whitespace around each removed.
export function splitParts(text) {
  return String(text).split("|").map(strip)
}

const SEPARATOR = " | "

// The response as the answer's type (number, code, choice text, or for order and classify the parts
// joined by " | "), or null when unreadable.
export function parseResponse(answer, response) {
  if (typeof response !== "string") return null
  if (answer.kind === "number") return parseNumber(response)
  if (answer.kind === "code") return parseCode(response, answer.bits)
  if (answer.kind === "order") {
    const parts = splitParts(response)
    const a = [...parts].sort(), b = [...answer.items].sort()
    return a.length === b.length && a.every((x, i) => x === b[i]) ? parts.join(SEPARATOR) : null
  }
  if (answer.kind === "classify") {
    const parts = splitParts(response)
    if (parts.length !== answer.items.length || parts.some((x) => !answer.categories.includes(x))) return null
    return parts.join(SEPARATOR)
  }
  const t = strip(response)
  return answer.choices.includes(t) ? t : null
}

// Whether `response` is right for `answer` (Answer.to_dict()); an unreadable response is wrong.
export function checkResponse(answer, response) {
  const got = parseResponse(answer, response)
  if (got === null) return false
  if (answer.kind === "number") {
    const value = jsonNumber(answer.value)
    const rule = answer.tolerance.rule
    const amount = jsonNumber(answer.tolerance.amount)
    if (Number.isNaN(value)) return Number.isNaN(got)
    if (rule === "exact") return got === value
    if (rule === "abs") return Math.abs(got - value) <= amount
    return Math.abs(got - value) <= amount * Math.abs(value)
  }
  return got === answer.value
}

// ---------------------------------------------------------------------------------------------
// feedback: the reason, from precomputed data (a decode table for codes), never recomputed here
// ---------------------------------------------------------------------------------------------

function sameNumber(a, b) {
  return a === b || (Number.isNaN(a) && Number.isNaN(b))
}

// {result: "correct" | "incorrect" | "unreadable", message} for a response; `tries` is the
// number of wrong answers before this one (the right answer is told from the second wrong try).
export function feedback(spec, response, tries) {
  const answer = spec.answer
  const got = parseResponse(answer, response)
  if (got === null) return {result: "unreadable", message: spec.unreadable}
  if (checkResponse(answer, response)) return {result: "correct", message: `Right: ${spec.answer_text}.`}
  let reason
  if (answer.kind === "number") {
    const value = jsonNumber(answer.value)
    const shown = strip(response)
    if (Number.isNaN(got) || Number.isNaN(value)) reason = `${shown} is not the answer.`
    else reason = got < value ? `${shown} is too low.` : `${shown} is too high.`
  } else if (answer.kind === "code") {
    const table = spec.decode || {}
    const row = table[String(got)]
    const hex = "0x" + got.toString(16).toUpperCase().padStart(Math.ceil(answer.bits / 4), "0")
    if (row === undefined) {
      reason = `${hex} is not the code: it lies far from the answer (outside the table this page carries).`
    } else {
      const v = jsonNumber(row.value)
      const right = jsonNumber(table[String(answer.value)].value)
      if (sameNumber(v, right)) reason = `${hex} decodes to ${row.text}, the answer's value, but it is another code (look at the sign bit, or which NaN).`
      else if (Number.isNaN(v)) reason = `${hex} is a NaN code of ${answer.format}.`
      else if (Number.isNaN(right)) reason = `${hex} decodes to ${row.text}; the answer is not a number.`
      else reason = `${hex} decodes to ${row.text}, ${v < right ? "too low" : "too high"}.`
    }
  } else if (answer.kind === "order" || answer.kind === "classify") {
    const mine = splitParts(got), right = answer.parts
    const hits = mine.filter((x, i) => x === right[i]).length
    reason = answer.kind === "order" ? `${hits} of ${right.length} items are in the right place.`
                                     : `${hits} of ${right.length} items are classified right.`
  } else {
    reason = `Not “${got}”.`
  }
  const reveal = tries >= 1 ? ` The answer: ${spec.answer_text}.` : " Try again, or open a hint."
  return {result: "incorrect", message: reason + reveal}
}

// ---------------------------------------------------------------------------------------------
// progress (localStorage "lowprec-progress"), with an in-page fallback when storage is refused
// ---------------------------------------------------------------------------------------------

// the fallback lives on window: each component class loads its own copy of this module
function memory() {
  if (typeof window.__lowprecProgress !== "object" || window.__lowprecProgress === null) window.__lowprecProgress = {}
  return window.__lowprecProgress
}

export function readProgress() {
  let raw
  try {
    raw = window.localStorage.getItem(PROGRESS_KEY)
  } catch (e) {
    return Object.assign({}, memory())  // storage refused
  }
  try {
    const data = raw === null ? {} : JSON.parse(raw)
    return data !== null && typeof data === "object" && !Array.isArray(data) ? data : {}
  } catch (e) {
    return {}  // not JSON: read as empty; the next write replaces it
  }
}

export function writeProgress(key, result) {
  const data = readProgress()
  data[key] = result
  memory()[key] = result
  try {
    window.localStorage.setItem(PROGRESS_KEY, JSON.stringify(data))
  } catch (e) {
    // storage refused (a private window, a sandbox): the mark lasts for this page only
  }
  window.dispatchEvent(new CustomEvent(PROGRESS_EVENT, {detail: {key, result}}))
}

function onProgress(model, callback) {
  const handler = () => callback(readProgress())
  window.addEventListener(PROGRESS_EVENT, handler)
  window.addEventListener("storage", handler)
  model.on("remove", () => {
    window.removeEventListener(PROGRESS_EVENT, handler)
    window.removeEventListener("storage", handler)
  })
}

// ---------------------------------------------------------------------------------------------
// views
// ---------------------------------------------------------------------------------------------

const CSS = `
:host { display: block; }
.lp-box { border: 1px solid #c9ced6; border-left: 4px solid #3b5bdb; border-radius: 6px;
  padding: 10px 14px; margin: 10px 0; background: #fbfcff; color: #1d2330; font-size: 15px; }
.lp-box.lp-prediction { border-left-color: #9c36b5; }
.lp-box.lp-challenge { border-left-color: #e8590c; }
.lp-kicker { font-weight: 700; font-size: 13px; text-transform: uppercase; letter-spacing: .04em;
  color: #3d4451; margin: 0 0 4px 0; }
.lp-form { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 8px 0; }
.lp-form label { font-weight: 600; }
.lp-form input[type=text] { font: inherit; padding: 4px 8px; border: 1px solid #6b7280; border-radius: 4px;
  min-width: 14em; }
fieldset { border: 1px solid #c9ced6; border-radius: 4px; margin: 8px 0; padding: 6px 10px; }
legend { font-weight: 600; padding: 0 4px; }
fieldset label { display: block; padding: 2px 0; cursor: pointer; }
button { font: inherit; padding: 4px 12px; border: 1px solid #3b5bdb; border-radius: 4px;
  background: #fff; color: #1e3a8a; cursor: pointer; }
button.lp-primary { background: #1e3a8a; border-color: #1e3a8a; color: #fff; }
button:disabled { cursor: default; opacity: .75; }
button:focus-visible, input:focus-visible, .lp-bit:focus-visible {
  outline: 3px solid #f59f00; outline-offset: 2px; }
.lp-actions { display: flex; flex-wrap: wrap; gap: 8px; margin: 6px 0; }
.lp-feedback { margin: 6px 0; min-height: 1.2em; }
.lp-feedback[data-tone=correct] { color: #1b5e20; font-weight: 600; }
.lp-feedback[data-tone=incorrect] { color: #8a1c1c; font-weight: 600; }
.lp-hint, .lp-solution { border-top: 1px dashed #c9ced6; margin-top: 6px; padding-top: 4px; }
.lp-label { font-weight: 700; color: #3d4451; }
.lp-lock-note { color: #3d4451; font-style: italic; margin: 8px 0; padding: 8px 12px;
  border: 1px dashed #9c36b5; border-radius: 6px; background: #fbf7fd; }
.lp-bits { display: flex; flex-wrap: wrap; gap: 3px; margin: 8px 0; }
.lp-bit { width: 2.2em; height: 2.4em; font: 700 18px monospace; color: #111; background: #fff;
  border: 2px solid var(--lp-field); border-bottom-width: 5px; border-radius: 4px; padding: 0; }
.lp-bit[aria-pressed=true] { background: var(--lp-field-tint); }
.lp-gap { width: 8px; }
.lp-current { font-family: monospace; margin: 4px 0; }
.lp-order { list-style: none; padding: 0; margin: 8px 0; }
.lp-order li { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; padding: 4px 6px; margin: 3px 0;
  border: 1px solid #c9ced6; border-radius: 4px; background: #fff; }
.lp-order .lp-pos { font-weight: 700; min-width: 1.6em; }
.lp-order .lp-item { flex: 1 1 12em; }
.lp-order button { padding: 2px 8px; }
.lp-order .lp-moves { display: flex; gap: 4px; flex: 0 0 auto; margin-left: auto; }
.lp-classify { display: grid; grid-template-columns: minmax(10em, 1fr) minmax(9em, auto); gap: 6px 10px;
  align-items: center; margin: 8px 0; }
.lp-classify select, .lp-lab select { font: inherit; padding: 3px 4px; max-width: 100%; }
.lp-lab { border-left-color: #0b7285; }
.lp-lab .lp-controls { display: grid; grid-template-columns: repeat(auto-fill, minmax(15em, 1fr)); gap: 8px 14px;
  margin: 8px 0; }
.lp-lab .lp-controls label { display: flex; flex-direction: column; gap: 2px; font-weight: 600; }
.lp-lab pre { background: #f1f3f5; padding: 8px 10px; border-radius: 4px; overflow-x: auto; font-size: 13px;
  margin: 8px 0; white-space: pre; }
.lp-table-wrap { overflow-x: auto; margin: 8px 0; }
.lp-lab table { border-collapse: collapse; font-size: 13px; min-width: 100%; }
.lp-lab th, .lp-lab td { border: 1px solid #d0d5dd; padding: 3px 6px; text-align: left; vertical-align: top; }
.lp-lab th { background: #eef1f5; }
.lp-lab tr.lp-update td { background: #fff3bf; }
.lp-lab tr.lp-error td { background: #ffe3e3; color: #8a1c1c; font-weight: 600; }
.lp-lab tr.lp-stash td, .lp-lab tr.lp-restore td { background: #e7f5ff; }
.lp-lab .lp-verdicts li[data-tone=correct] { color: #1b5e20; }
.lp-lab .lp-verdicts li[data-tone=incorrect] { color: #8a1c1c; }
.lp-lab .lp-result { border-top: 1px dashed #c9ced6; margin-top: 8px; padding-top: 6px; }
.lp-lazy { min-height: 320px; border: 1px dashed #9aa3b2; border-radius: 6px; padding: 10px 14px; margin: 10px 0;
  color: #3d4451; background: #fbfcff; }
.lp-lazy-note { font-style: italic; margin: 4px 0; }
`

function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue
    if (k === "text") node.textContent = v
    else node.setAttribute(k, v === true ? "" : String(v))
  }
  for (const child of children) if (child) node.append(child)
  return node
}

function idOf(key, suffix) {
  return "lp-" + key.replace(/[^A-Za-z0-9-]/g, "-") + "-" + suffix
}

// What a learner did in a component (typed text, tries, hints shown, the last verdict) is kept
// here, keyed by the component's key, so that a re-render (Bokeh rebuilds a layout's children
// when its layout changes) shows the same state; on a fresh page it starts from the progress store.
const STATE = new Map()

function stateOf(key, init) {
  if (!STATE.has(key)) STATE.set(key, init())
  return STATE.get(key)
}

function orderControl(spec, key, legendText, st) {
  // the items as a list the learner rearranges with Move up / Move down; st.order holds indices
  const items = spec.answer.items
  if (!Array.isArray(st.order)) st.order = items.map((_, i) => i)
  const list = el("ol", {class: "lp-order", id: idOf(key, "order"), "aria-describedby": idOf(key, "how")})
  const buttons = []
  let disabled = false
  const sync = () => { st.response = st.order.map((i) => items[i]).join(SEPARATOR) }
  const draw = (focus) => {
    list.replaceChildren()
    buttons.length = 0
    st.order.forEach((itemIndex, pos) => {
      const up = el("button", {type: "button", text: "↑ Up", "aria-label": `Move “${items[itemIndex]}” up`,
                               disabled: disabled || pos === 0})
      const down = el("button", {type: "button", text: "↓ Down", "aria-label": `Move “${items[itemIndex]}” down`,
                                 disabled: disabled || pos === st.order.length - 1})
      const move = (delta) => {
        const other = pos + delta
        ;[st.order[pos], st.order[other]] = [st.order[other], st.order[pos]]
        sync()
        draw({index: itemIndex, delta})
      }
      up.addEventListener("click", () => move(-1))
      down.addEventListener("click", () => move(1))
      buttons.push(up, down)
      list.append(el("li", {"data-item": items[itemIndex]}, [el("span", {class: "lp-pos", text: `${pos + 1}.`}),
        el("span", {class: "lp-item", text: items[itemIndex]}), el("span", {class: "lp-moves"}, [up, down])]))
      if (focus && focus.index === itemIndex) {
        const target = focus.delta < 0 ? (pos === 0 ? down : up) : (pos === st.order.length - 1 ? up : down)
        setTimeout(() => target.focus(), 0)
      }
    })
  }
  sync()
  draw(null)
  const node = el("div", {class: "lp-field", role: "group", "aria-label": legendText}, [
    el("p", {class: "lp-label", text: legendText}), list,
    el("span", {id: idOf(key, "how"), class: "lp-how", text: spec.how})])
  return {node, disable: () => { disabled = true; draw(null) }}
}

function classifyControl(spec, key, legendText, st) {
  // one select per item; st.picks holds the chosen category of each ("" = none yet)
  const {items, categories} = spec.answer
  if (!Array.isArray(st.picks)) st.picks = items.map(() => "")
  const sync = () => { st.response = st.picks.join(SEPARATOR) }
  const selects = items.map((item, i) => {
    const sel = el("select", {id: idOf(key, `cat-${i}`)},
                   [el("option", {value: "", text: "choose…"}), ...categories.map((c) => el("option", {value: c, text: c}))])
    sel.value = st.picks[i]
    sel.addEventListener("change", () => { st.picks[i] = sel.value; sync() })
    return sel
  })
  sync()
  const grid = el("div", {class: "lp-classify"})
  items.forEach((item, i) => grid.append(el("label", {for: selects[i].id, text: item}), selects[i]))
  const node = el("fieldset", {"aria-describedby": idOf(key, "how")}, [el("legend", {text: legendText}), grid,
    el("span", {id: idOf(key, "how"), class: "lp-how", text: spec.how})])
  return {node, disable: () => { for (const x of selects) x.disabled = true }}
}

function answerControl(spec, key, legendText, st) {
  // a text box with its label, or a radio group with its legend, whose value lives in st.response
  const answer = spec.answer
  if (answer.kind === "order") return orderControl(spec, key, legendText, st)
  if (answer.kind === "classify") return classifyControl(spec, key, legendText, st)
  if (answer.kind === "choice") {
    const name = idOf(key, "choice")
    const radios = answer.choices.map((c, i) => el("input", {type: "radio", name, value: c, id: `${name}-${i}`,
                                                              checked: st.response === c}))
    for (const r of radios) r.addEventListener("change", () => { if (r.checked) st.response = r.value })
    const node = el("fieldset", {}, [el("legend", {text: legendText}),
      ...radios.map((r, i) => el("label", {for: r.id}, [r, " " + answer.choices[i]]))])
    return {node, disable: () => { for (const r of radios) r.disabled = true }}
  }
  const input = el("input", {type: "text", id: idOf(key, "input"), autocomplete: "off", spellcheck: "false",
                             "aria-describedby": idOf(key, "how")})
  input.value = st.response
  input.addEventListener("input", () => { st.response = input.value })
  const node = el("span", {class: "lp-field"}, [
    el("label", {for: input.id, text: legendText}), " ", input,
    el("span", {id: idOf(key, "how"), class: "lp-how", text: " " + spec.how})])
  return {node, disable: () => { input.disabled = true }}
}

function showVerdict(root, status, st) {
  if (st.result) root.setAttribute("data-result", st.result)
  else root.removeAttribute("data-result")
  if (st.tone) status.setAttribute("data-tone", st.tone)
  else status.removeAttribute("data-tone")
  status.textContent = st.message
}

function renderExercise(model, spec) {
  const key = spec.key
  const st = stateOf(key, () => {
    const saved = readProgress()[key]
    const start = {response: "", tries: 0, hints: 0, solution: false, result: null, tone: null, message: ""}
    if (saved === "correct") Object.assign(start, {result: "correct", tone: "correct",
                                                   message: `Solved earlier in this browser: ${spec.answer_text}.`})
    if (saved === "incorrect") Object.assign(start, {result: "incorrect", tone: "incorrect",
                                                     message: "Your last answer here was wrong; try again."})
    return start
  })
  const root = el("section", {class: "lp-box lp-exercise", "data-exercise": key, "aria-label": `Exercise ${spec.id}`})
  const control = answerControl(spec, key, "Your answer", st)
  const check = el("button", {type: "submit", class: "lp-primary", text: "Check"})
  const form = el("form", {class: "lp-form"}, [control.node, check])
  const status = el("div", {class: "lp-feedback", role: "status", "aria-live": "polite"})
  const hints = (model.get_child("hints") || []).map((h, i) =>
    el("div", {class: "lp-hint", id: idOf(key, `hint-${i}`)}, [el("span", {class: "lp-label", text: `Hint ${i + 1}`}), h]))
  const solution = el("div", {class: "lp-solution", id: idOf(key, "solution")},
                      [el("span", {class: "lp-label", text: "Worked solution"}), model.get_child("solution")])
  const hintButton = el("button", {type: "button", "aria-controls": hints.map((h) => h.id).join(" ")})
  const solutionButton = el("button", {type: "button", "aria-controls": solution.id})
  const show = () => {
    hints.forEach((h, i) => { h.hidden = i >= st.hints })
    hintButton.textContent = st.hints < hints.length ? `Show hint ${st.hints + 1} of ${hints.length}` : "All hints shown"
    hintButton.disabled = st.hints >= hints.length
    solution.hidden = !st.solution
    solutionButton.setAttribute("aria-expanded", String(st.solution))
    solutionButton.textContent = st.solution ? "Hide the worked solution" : "Show the worked solution"
    showVerdict(root, status, st)
  }
  hintButton.addEventListener("click", () => { st.hints = Math.min(st.hints + 1, hints.length); show() })
  solutionButton.addEventListener("click", () => { st.solution = !st.solution; show() })
  form.addEventListener("submit", (event) => {
    event.preventDefault()
    const out = feedback(spec, st.response, st.tries)
    if (out.result === "unreadable") {
      Object.assign(st, {tone: null, message: out.message})
    } else {
      if (out.result === "incorrect") st.tries += 1
      Object.assign(st, {result: out.result, tone: out.result, message: out.message})
      writeProgress(key, out.result)
    }
    show()
  })
  show()
  root.append(el("p", {class: "lp-kicker", text: "Exercise"}), model.get_child("prompt"), form, status,
              el("div", {class: "lp-actions"}, [hintButton, solutionButton]), ...hints, solution)
  return root
}

function renderPrediction(model, spec) {
  const key = spec.key
  const st = stateOf(key, () => {
    const start = {response: "", result: null, tone: null, message: ""}
    if (readProgress()[key] !== undefined) Object.assign(start, {result: "answered",
      message: `Answered earlier in this browser. The model gives ${spec.answer_text}.`})
    return start
  })
  const root = el("section", {class: "lp-box lp-prediction", "data-prediction": key, "aria-label": `Prediction ${spec.id}`})
  const control = answerControl(spec, key, "Your prediction", st)
  const lock = el("button", {type: "submit", class: "lp-primary", text: "Lock in my prediction"})
  const form = el("form", {class: "lp-form"}, [control.node, lock])
  const status = el("div", {class: "lp-feedback", role: "status", "aria-live": "polite"})
  const show = () => {
    if (st.result === "answered") {
      control.disable()
      lock.disabled = true
    }
    showVerdict(root, status, st)
  }
  form.addEventListener("submit", (event) => {
    event.preventDefault()
    if (st.result === "answered") return
    if (parseResponse(spec.answer, st.response) === null) {
      st.message = spec.unreadable
    } else {
      const right = checkResponse(spec.answer, st.response)
      Object.assign(st, {result: "answered", message: `You predicted “${strip(st.response)}”. The model gives ` +
        `${spec.answer_text}${right ? ", as you predicted." : ", not what you predicted."} ${spec.after}`})
      writeProgress(key, "answered")
    }
    show()
  })
  show()
  root.append(el("p", {class: "lp-kicker", text: "Predict first"}), model.get_child("question"), form, status)
  return root
}

// A lock sits first in a region (a Panel Column: this marker, then what it locks). Until the
// prediction spec.lock is answered, the region's other children are invisible (their Bokeh models'
// `visible`, so plots and tables lay out properly once shown; a child with the CSS class
// `lp-unlocked`, such as the alert for refused URL values, is never hidden) and the marker shows a note; the
// region's element carries data-locked-by, data-state ("locked" | "open") and, for an
// explanation, data-explains.
function renderLock(model, spec, view) {
  const root = el("div", {class: "lp-lock", "data-lock": spec.lock})
  const note = spec.note ? el("p", {class: "lp-lock-note", text: spec.note}) : null
  const update = (progress) => {
    const open = progress[spec.lock] !== undefined
    const region = view.parent
    if (region && region.el) {
      region.el.setAttribute("data-locked-by", spec.lock)
      if (spec.explains) region.el.setAttribute("data-explains", spec.lock)
      region.el.setAttribute("data-state", open ? "open" : "locked")
      for (const child of region.child_views || []) {
        if (child === view || (child.model.css_classes || []).includes("lp-unlocked")) continue
        if (child.model.visible !== open) child.model.visible = open
      }
    }
    root.setAttribute("data-state", open ? "open" : "locked")
    if (note) note.hidden = open
  }
  if (note) root.append(note)
  update(readProgress())
  onProgress(model, update)
  return root
}

function renderChallenge(model, spec) {
  const verdicts = spec.verdicts
  const st = stateOf(spec.key, () => ({code: 0, result: null, tone: null, message: ""}))
  const root = el("section", {class: "lp-box lp-challenge", "data-challenge": spec.key, "aria-label": "Bin challenge"})
  const nbits = spec.fields.length
  const buttons = spec.fields.map((field, i) => {
    const weight = nbits - 1 - i
    const b = el("button", {type: "button", class: "lp-bit", "aria-label": `bit ${weight} (${field})`,
                            style: `--lp-field: ${spec.colors[field]}; --lp-field-tint: ${spec.tints[field]}`})
    b.addEventListener("click", () => {
      st.code ^= 1 << weight
      Object.assign(st, {result: null, tone: null, message: ""})
      show()
    })
    return b
  })
  const bitRow = el("div", {class: "lp-bits", role: "group",
                            "aria-label": `The ${nbits} bits of the code, most significant first`})
  buttons.forEach((b, i) => {
    if (i > 0 && spec.fields[i] !== spec.fields[i - 1]) bitRow.append(el("span", {class: "lp-gap", "aria-hidden": "true"}))
    bitRow.append(b)
  })
  const current = el("p", {class: "lp-current", "aria-live": "polite"})
  const check = el("button", {type: "button", class: "lp-primary", text: "Check this code"})
  const status = el("div", {class: "lp-feedback", role: "status", "aria-live": "polite"})
  const show = () => {
    const row = verdicts[st.code]
    buttons.forEach((b, i) => {
      const on = ((st.code >> (nbits - 1 - i)) & 1) === 1
      b.textContent = on ? "1" : "0"
      b.setAttribute("aria-pressed", String(on))
    })
    current.textContent = `code ${row.hex} (${row.grouped}) = ${row.shown}`
    root.setAttribute("data-code", row.hex)
    showVerdict(root, status, st)
  }
  check.addEventListener("click", () => {
    const row = verdicts[st.code]
    const result = row.verdict === "correct" ? "correct" : "incorrect"
    Object.assign(st, {result, tone: result, message: row.text})
    show()
    model.checked_code = st.code  // served: the Python side hears the check too
  })
  show()
  root.append(el("p", {class: "lp-kicker", text: "Challenge"}), el("p", {class: "lp-task", text: spec.task}),
              bitRow, current, el("div", {class: "lp-actions"}, [check]), status)
  return root
}


// ---------------------------------------------------------------------------------------------
// labs: drawn from data a simulation computed (lowprec.course.lesson_labs); nothing is computed here
// ---------------------------------------------------------------------------------------------

function selectControl(key, name, label, options, value, onChange) {
  const sel = el("select", {id: idOf(key, name)}, options.map(([v, text]) => el("option", {value: v, text})))
  sel.value = value
  sel.addEventListener("change", () => onChange(sel.value))
  return {node: el("label", {for: sel.id}, [label, sel]), sel}
}

function table(caption, head, rows, rowClass) {
  const t = el("table", {}, [el("caption", {class: "lp-label", text: caption}),
    el("thead", {}, [el("tr", {}, head.map((h) => el("th", {scope: "col", text: h})))]),
    el("tbody", {}, rows.map((r, i) => el("tr", {class: rowClass ? rowClass(i) : null},
                                          r.map((c) => el("td", {text: String(c)})))))])
  return el("div", {class: "lp-table-wrap"}, [t])
}

function yesNo(b) { return b ? "yes" : "no" }
function fmtScale(v) { return v === null || v === undefined ? "—" : String(Number(v.toPrecision(4))) }

const PLACEMENT_QUESTIONS = [
  ["stash", "In its first forward, does module A stash its scale?", ["yes", "no"]],
  ["restore", "In the recompute, does module A try to restore a stash?", ["yes", "no"]],
  ["key_error", "Does the first backward raise KeyError?", ["yes", "no"]],
  ["updates", "How often does a forward scale update fire per step?", ["never", "once", "twice"]],
]

function placementTruth(sum) {
  const per = sum.updates_per_step
  const n = per.length ? Math.max(...per) : 0
  return {stash: yesNo(sum.stash), restore: yesNo(sum.restore), key_error: yesNo(sum.key_error),
          updates: n === 0 ? "never" : n === 1 ? "once" : "twice"}
}

function placementCode(data, c) {
  const inner = Number(c.inside)
  const body = inner === 0 ? ["def block(x):", "    return module_b(module_a(x))"]
    : inner === 1 ? ["def block(x):", "    with te.autocast(enabled=True, recipe=recipe):",
                     "        return module_b(module_a(x))"]
    : ["def block(x):", "    with te.autocast(enabled=True, recipe=recipe):", "        h = module_a(x)",
       "    return module_b(h)  # BF16: outside the inner autocast"]
  const call = `te.checkpoint(block, x, use_reentrant=${c.reentrant === "1" ? "True" : "False"})`
  const outer = Number(c.outside)
  const main = outer === 2 ? [`y = ${call}`]
    : [`with te.autocast(enabled=${outer === 0 ? "True" : "False"}, recipe=recipe):`, `    y = ${call}`]
  const extra = c.module === "1" ? ["with te.autocast(enabled=True, recipe=recipe):", "    y = module_c(y)  # FP8, outside the region"] : []
  const mode = c.eval === "1" ? ["module_a.eval()  # A in eval mode inside a training step"] : []
  return ["recipe = DelayedScaling()", ...mode, ...body, "", ...main, ...extra, "y.sum().backward()"].join("\n")
}

function renderPlacement(model, spec) {
  const data = spec.data
  const key = spec.key
  const first = data.placements[data.start] || [0, 0]
  const st = stateOf(key, () => ({c: {outside: String(first[0]), inside: String(first[1]), reentrant: "1", gate: "live",
                                      module: "0", eval: "0"}, answers: {}, shown: false}))
  const root = el("section", {class: "lp-box lp-lab", "data-lab": "te-placement", "aria-label": spec.title})
  const code = el("pre", {"aria-label": "The arrangement as code"})
  const result = el("div", {class: "lp-result", "aria-live": "polite"})
  const status = el("div", {class: "lp-feedback", role: "status", "aria-live": "polite"})
  const caseKey = () => [st.c.outside, st.c.inside, st.c.reentrant, st.c.gate, st.c.module, st.c.eval].join("|")
  const controls = []
  const reset = () => { st.answers = {}; st.shown = false; draw() }
  const set = (name) => (v) => { st.c[name] = v; reset() }
  controls.push(selectControl(key, "outside", "Around te.checkpoint", data.outside.map((t, i) => [String(i), t]), st.c.outside, set("outside")))
  controls.push(selectControl(key, "inside", "Inside the checkpointed function", data.inside.map((t, i) => [String(i), t]), st.c.inside, set("inside")))
  controls.push(selectControl(key, "reentrant", "use_reentrant", [["1", "True (te.checkpoint's default)"], ["0", "False"]], st.c.reentrant, set("reentrant")))
  controls.push(selectControl(key, "gate", "Stash gate", [["entry", "before the fix: FP8 latched at checkpoint entry"], ["live", "after the fix: FP8 read live"]], st.c.gate, set("gate")))
  controls.push(selectControl(key, "module", "FP8 module C outside the region", [["0", "no"], ["1", "yes, under its own te.autocast"]], st.c.module, set("module")))
  controls.push(selectControl(key, "eval", "Module A", [["0", "in training mode"], ["1", "in .eval() mode"]], st.c.eval, set("eval")))
  const presets = el("div", {class: "lp-actions", role: "group", "aria-label": "Named placements"},
    Object.entries(data.placements).map(([name, [o, i]]) => {
      const b = el("button", {type: "button", text: `${name} placement`})
      b.addEventListener("click", () => { st.c.outside = String(o); st.c.inside = String(i); reset() })
      return b
    }))
  const questions = PLACEMENT_QUESTIONS.map(([qid, text, options]) => {
    const name = idOf(key, `q-${qid}`)
    const radios = options.map((o, i) => {
      const r = el("input", {type: "radio", name, value: o, id: `${name}-${i}`})
      r.addEventListener("change", () => { if (r.checked) st.answers[qid] = o })
      return r
    })
    return {qid, radios, node: el("fieldset", {}, [el("legend", {text}),
      ...radios.map((r, i) => el("label", {for: r.id}, [r, " " + options[i]]))])}
  })
  const reveal = el("button", {type: "button", class: "lp-primary", text: "Lock in and show the timeline"})
  reveal.addEventListener("click", () => {
    const missing = PLACEMENT_QUESTIONS.filter(([qid]) => st.answers[qid] === undefined)
    if (missing.length) {
      status.textContent = `Predict all four first (${missing.length} still open).`
      return
    }
    st.shown = true
    draw()
  })
  const draw = () => {
    for (const c of controls) c.sel.value = st.c[c.sel.id.split("-").pop()] ?? c.sel.value
    code.textContent = placementCode(data, st.c)
    for (const q of questions) for (const r of q.radios) { r.checked = st.answers[q.qid] === r.value; r.disabled = st.shown }
    reveal.disabled = st.shown
    status.textContent = st.shown ? "" : "Predict, then show the timeline. Changing the arrangement asks again."
    result.replaceChildren()
    if (!st.shown) return
    const entry = data.cases[caseKey()]
    const sum = entry.summary
    const truth = placementTruth(sum)
    const verdicts = el("ul", {class: "lp-verdicts"}, PLACEMENT_QUESTIONS.map(([qid, text]) => {
      const right = st.answers[qid] === truth[qid]
      return el("li", {"data-tone": right ? "correct" : "incorrect",
                       text: `${text} You said ${st.answers[qid]}; the model: ${truth[qid]}.`})
    }))
    const scales = sum.a_scale_forward.map((f, i) => `step ${i}: forward ${fmtScale(f)}, recompute ${fmtScale(sum.a_scale_recompute[i])}`)
    const lines = [
      `Outcome: ${sum.outcome}${sum.error ? ` (step ${sum.error_step}: ${sum.error})` : ""}.`,
      `Forward scale updates per step: ${sum.updates_per_step.join(", ")}. Module A's encode scale — ${scales.join("; ")}.`,
      sum.columnwise_phase1 ? "With grad off in the first forward, A's weight quantizer is still asked for a columnwise copy: the stash gate is on." : "",
    ].filter(Boolean)
    const shownSteps = 2
    const rows = entry.events.filter((e) => e[0] < shownSteps).map((e) => [e[0], e[1], e[4], e[5] ? "on" : "off", e[6] ? "on" : "off", data.texts[e[3]]])
    const kinds = entry.events.filter((e) => e[0] < shownSteps).map((e) => e[2])
    result.append(verdicts, ...lines.map((t) => el("p", {text: t})),
      table(`Timeline of steps 0 and 1 (of ${data.steps}): phase, autocast depth, grad mode and FP8 after each event`,
            ["step", "phase", "depth", "grad", "FP8", "event"], rows,
            (i) => ({update: "lp-update", error: "lp-error", stash: "lp-stash", restore: "lp-restore"})[kinds[i]] || null))
    root.setAttribute("data-outcome", sum.outcome)
  }
  root.append(el("p", {class: "lp-kicker", text: "Lab"}), el("p", {class: "lp-task", text: spec.title}), presets,
              el("div", {class: "lp-controls"}, controls.map((c) => c.node)), code,
              ...questions.map((q) => q.node), el("div", {class: "lp-actions"}, [reveal]), status, result,
              el("p", {class: "lp-how", text: `Model: ${data.source}.`}))
  draw()
  return root
}

const HUNT_VIEWS = {
  low_precision_off: (c) => [
    el("p", {text: `With the quantizer: ${c.differ} of ${c.recomputed} recomputed activations differ from the forward. ` +
      `With low precision off (a stateless BF16 cast in its place): ${c.low_precision_off.differ} of ${c.low_precision_off.recomputed} ` +
      `differ, ${c.low_precision_off.commits} state commits.`})],
  matched_points: (c) => [table(`Per layer, over ${c.steps} steps: recomputed steps whose quantizer input / GEMM output differ from the forward`,
      ["layer", "input differs", "output differs", "largest |difference|"],
      c.matched_points.map((m) => [m.layer, m.input_differs, m.output_differs, typeof m.max_diff === "string" ? m.max_diff : String(Number(m.max_diff.toPrecision(3)))]))],
  transitions: (c) => [el("p", {text: `State commits in step 0, per layer: ${c.transitions.per_layer.join(", ")} ` +
      `(the design's rule: ${c.transitions.rule} per layer per step). Whole run: ${c.transitions.total} commits, ${c.transitions.expected} expected.`})],
  traversal: (c) => [
    el("p", {text: `Forward visits layers ${c.traversal.forward_order.join(", ")}; the recompute ${c.traversal.recompute_order.join(", ")}.`}),
    table(`Whose amax sized each layer's scale at step ${c.traversal.step} (-1: the initial scale)`,
          ["layer", "forward", "recompute"],
          c.traversal.source_forward.map((s, i) => [i, s, c.traversal.source_recompute[i]])),
    el("p", {text: `A scale came from another layer's amax in ${c.traversal.foreign_forward} of ${c.traversal.calls} forward calls. ` +
      `The same design with one layer: ${c.traversal.one_layer_differ} of ${c.traversal.one_layer_recomputed} recomputed activations differ.`})],
  pairing: (c) => [el("p", {text: `Consumers reading a descale or centre other than the one their codes were encoded with: ` +
      `${c.pairing.unpaired_forward} of ${c.pairing.calls} forward calls, ${c.pairing.unpaired_recompute} of ${c.pairing.calls} recomputed calls.`})],
  telemetry: (c) => [
    el("p", {text: `Optimizer steps attempted: ${c.telemetry.attempted}; applied: ${c.telemetry.applied}; skipped (non-finite gradient): ${c.telemetry.skipped}.`}),
    el("p", {text: `Gradient norm per step: ${c.telemetry.grad_norm.map((g) => typeof g === "string" ? g : String(Number(g.toPrecision(3)))).join(", ")}.`})],
}

function renderHunt(model, spec) {
  const data = spec.data
  const key = spec.key
  const letters = Object.keys(data.cases)
  const st = stateOf(key, () => ({case: letters[0], open: {}}))
  const root = el("section", {class: "lp-box lp-lab", "data-lab": "defect-hunt", "aria-label": spec.title})
  const result = el("div", {class: "lp-result", "aria-live": "polite"})
  const pick = selectControl(key, "case", "Case", letters.map((l) => [l, `case ${l}`]), st.case, (v) => { st.case = v; draw() })
  const buttons = Object.entries(data.controls).map(([cid, label]) => {
    const b = el("button", {type: "button", text: label, "aria-pressed": "false", "data-control": cid})
    b.addEventListener("click", () => {
      const open = st.open[st.case] || (st.open[st.case] = {})
      open[cid] = !open[cid]
      draw()
    })
    return {cid, b}
  })
  const draw = () => {
    pick.sel.value = st.case
    const c = data.cases[st.case]
    const open = st.open[st.case] || {}
    for (const {cid, b} of buttons) b.setAttribute("aria-pressed", String(Boolean(open[cid])))
    root.setAttribute("data-case", st.case)
    result.replaceChildren(el("p", {text: `Case ${st.case}: ${c.differ} of ${c.recomputed} recomputed activations differ from the forward (bit for bit).`}))
    for (const {cid} of buttons) {
      if (!open[cid]) continue
      result.append(el("div", {class: "lp-control-result", "data-control": cid},
                           [el("p", {class: "lp-label", text: data.controls[cid]}), ...HUNT_VIEWS[cid](c)]))
    }
  }
  root.append(el("p", {class: "lp-kicker", text: "Lab"}), el("p", {class: "lp-task", text: spec.title}),
              el("div", {class: "lp-controls"}, [pick.node]),
              el("div", {class: "lp-actions", role: "group", "aria-label": "Controls"}, buttons.map((x) => x.b)),
              result, el("p", {class: "lp-how", text: `Each case: ${data.setup}.`}))
  draw()
  return root
}

// A widget drawn when it is needed (lesson pages): the slot holds the widget's place and asks for
// it when it comes within half a window of the view, or else in the background, one slot at a time
// in page order, once nothing else is loading. Served (lowprec.app.pages.LazyWidget) it asks the
// server (`model.requested = true`), which builds the widget and swaps it in; exported
// (lowprec.app.export.page._defer_widgets) the widget's models are already in the page, in the slot's
// tags, and the slot swaps them in itself. Either way the slot's view is then removed.
// `window.lowprecLazy` says what is still waiting (tests, the page-ready benchmark).
const LAZY = {slots: new Map(), timer: null, observer: null}
const LAZY_SWEEP_MS = 400  // how often the background sweep looks for the next slot to load

function lazyRequest(slot) {
  if (slot.requested || slot.done) return
  slot.requested = true
  slot.root.setAttribute("data-state", "loading")
  if (slot.offline) setTimeout(() => lazySwapIn(slot), 0)
  else slot.model.requested = true  // served: the server builds the widget and swaps it in
}

// An exported page: the widget's view model waits in the slot's tags; put it where the slot is.
function lazySwapIn(slot) {
  const parent = slot.view.parent
  const own = slot.view.model
  const widget = (own.tags || []).find((t) => t !== null && typeof t === "object" && t.id !== undefined
                                            && t.properties !== undefined)
  if (!parent || widget === undefined) return
  parent.model.children = parent.model.children.map((c) => (c === own ? widget : c))
}

function lazySweep() {
  LAZY.timer = null
  const slots = [...LAZY.slots.values()]
  if (!slots.some((s) => s.requested && !s.done)) {
    const next = slots.find((s) => !s.requested && !s.done)
    if (next) lazyRequest(next)
  }
  if (slots.some((s) => !s.done)) lazySchedule(LAZY_SWEEP_MS)
}

function lazySchedule(ms) {
  if (LAZY.timer === null) LAZY.timer = setTimeout(lazySweep, ms)
}

function lazyObserver() {
  if (LAZY.observer === null && typeof IntersectionObserver !== "undefined") {
    LAZY.observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue
        for (const slot of LAZY.slots.values()) if (slot.root === entry.target) lazyRequest(slot)
      }
    }, {rootMargin: "50% 0px"})
  }
  return LAZY.observer
}

function inView(node) {
  const r = node.getBoundingClientRect()
  return r.height > 0 && r.bottom > 0 && r.top < window.innerHeight
}

function renderLazy(model, spec, view) {
  const root = el("div", {class: "lp-lazy", "data-lazy": spec.name, "data-state": "waiting", "aria-busy": "true"}, [
    el("p", {class: "lp-kicker", text: spec.title}),
    el("p", {class: "lp-lazy-note", text: spec.note})])
  let slot = LAZY.slots.get(model.id)
  if (slot === undefined) {
    slot = {model, root, view, offline: spec.offline === true, requested: false, done: false}
    LAZY.slots.set(model.id, slot)
    model.on("remove", () => {  // the server swapped this slot for its widget
      slot.done = true
      if (LAZY.observer) LAZY.observer.unobserve(slot.root)
    })
  } else {  // Bokeh rendered the slot again: keep its state, watch the new element
    if (LAZY.observer) LAZY.observer.unobserve(slot.root)
    slot.root = root
    slot.view = view
    if (slot.requested) root.setAttribute("data-state", "loading")
  }
  const observer = lazyObserver()
  if (observer) observer.observe(root)
  else lazyRequest(slot)  // no IntersectionObserver: load at once
  lazySchedule(spec.sweep_ms)
  return root
}

if (typeof window !== "undefined") {
  window.lowprecLazy = {
    total: () => LAZY.slots.size,
    waiting: () => [...LAZY.slots.values()].filter((s) => !s.done).length,
    waitingInView: () => [...LAZY.slots.values()].filter((s) => !s.done && s.root.isConnected && inView(s.root)).length,
  }
}

const VIEWS = {exercise: renderExercise, prediction: renderPrediction, lock: renderLock, challenge: renderChallenge,
               lazy: renderLazy, placement: renderPlacement, hunt: renderHunt}

export function render({model, view}) {
  const wrapper = el("div", {class: "lp-component"})
  const build = () => {
    const spec = JSON.parse(model.spec)
    const make = VIEWS[spec.role]
    wrapper.replaceChildren(el("style", {text: CSS}),
      make === undefined ? el("p", {text: `unknown lesson component ${spec.role}`}) : make(model, spec, view))
  }
  build()
  model.on("spec", build)  // served: a new challenge (or block) replaces the view
  return wrapper
}

// for tests and for the site's navigation: the same functions, reachable from the page
if (typeof window !== "undefined") {
  window.lowprecLesson = {checkResponse, parseResponse, feedback, readProgress, writeProgress, splitParts, PROGRESS_KEY}
}
