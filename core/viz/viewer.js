// ivytrace HTML viewer: written for this project, plain JavaScript, no libraries.
//
// Why hand-written: the file must work offline from disk with everything inlined, and the graph
// layout libraries that would fit (dagre, elkjs) are not packaged by PyPI or Debian here. The
// graph it draws is a tree of module calls whose groups are contiguous runs of a topological order,
// so a small compound layered layout does: each expanded group lays out its direct children
// (nodes and child groups, a collapsed group being one box) in layers by longest path, orders each
// layer by the barycentre of its predecessors and packs it; expanded child groups are laid out
// first and placed as one big box. Only expanded groups are laid out, so a 100k-node graph opened
// collapsed costs one pass over its edges plus a layout of the few boxes on screen.
(function () {
  'use strict';
  const T0 = performance.now();
  const D = JSON.parse(document.getElementById('ivy-data').textContent);
  const TParsed = performance.now();
  const S = D.S, NN = D.N.length, NG = D.G.length, DIFF = !!D.diff;
  const SVGNS = 'http://www.w3.org/2000/svg';
  const $ = (id) => document.getElementById(id);

  // ---- data ---------------------------------------------------------------------------------
  const nKind = new Uint8Array(NN), nGroup = new Int32Array(NN), nName = new Int32Array(NN), nOp = new Int32Array(NN),
    nCanon = new Int32Array(NN), nArgs = new Int32Array(NN), nDtype = new Int32Array(NN), nShape = new Int32Array(NN),
    nFile = new Int32Array(NN), nLine = new Int32Array(NN), nDur = new Float64Array(NN), nDiff = new Uint8Array(NN),
    nBefore = new Int32Array(NN);
  const nIns = new Array(NN), nConsts = new Array(NN), nOuts = new Array(NN);
  const EMPTY = [];
  for (let i = 0; i < NN; i++) {
    const r = D.N[i];
    nKind[i] = r[0]; nGroup[i] = r[1]; nName[i] = r[2]; nOp[i] = r[3] || 0; nCanon[i] = r[4] || 0; nArgs[i] = r[5] || 0;
    nDtype[i] = r[6] || 0; nShape[i] = r[7] || 0; nFile[i] = r[8] || 0; nLine[i] = r[9] || 0; nDur[i] = (r[10] || 0) / 10;  // µs
    nIns[i] = r[11] || EMPTY; nConsts[i] = r[12] || EMPTY; nDiff[i] = r[13] || 0; nBefore[i] = r[14] || 0;
  }
  D.N = null;  // let the parsed rows go
  for (let i = 0; i < NN; i++) nOuts[i] = EMPTY;
  for (let i = 0; i < NN; i++) for (const u of nIns[i]) { if (nOuts[u] === EMPTY) nOuts[u] = []; nOuts[u].push(i); }
  const gParent = new Int32Array(NG), gName = new Int32Array(NG), gDepth = new Int32Array(NG),
    gFirst = new Float64Array(NG).fill(Infinity), gCount = new Int32Array(NG), gDur = new Float64Array(NG),
    gDiff = new Int32Array(NG), gExpanded = new Uint8Array(NG);
  const gGroups = [], gNodes = [];
  for (let g = 0; g < NG; g++) { gParent[g] = D.G[g][0]; gName[g] = D.G[g][1]; gGroups.push([]); gNodes.push([]); }
  for (let g = 1; g < NG; g++) gGroups[gParent[g]].push(g);
  for (let i = 0; i < NN; i++) gNodes[nGroup[i]].push(i);
  const gOrder = [0];  // parents before children
  for (let k = 0; k < gOrder.length; k++) for (const c of gGroups[gOrder[k]]) { gDepth[c] = gDepth[gOrder[k]] + 1; gOrder.push(c); }
  for (let i = 0; i < NN; i++) {
    const g = nGroup[i];
    if (i < gFirst[g]) gFirst[g] = i;
    gCount[g]++; gDur[g] += nDur[i]; if (nDiff[i]) gDiff[g]++;
  }
  for (let k = gOrder.length - 1; k > 0; k--) {
    const g = gOrder[k], p = gParent[g];
    if (gFirst[g] < gFirst[p]) gFirst[p] = gFirst[g];
    gCount[p] += gCount[g]; gDur[p] += gDur[g]; gDiff[p] += gDiff[g];
  }
  for (const g of gOrder) gGroups[g].sort((a, b) => gFirst[a] - gFirst[b]);
  const gPathCache = new Array(NG);
  function gPath(g) {
    if (g === 0) return '';
    if (gPathCache[g] === undefined) { const p = gParent[g]; gPathCache[g] = (p === 0 ? '' : gPath(p) + '.') + S[gName[g]]; }
    return gPathCache[g];
  }
  const name = (i) => S[nName[i]];
  const opLabel = (i) => S[nCanon[i]] || S[nOp[i]];
  const fmtUs = (us) => us >= 1000 ? (us / 1000).toFixed(us >= 100000 ? 0 : 2) + ' ms' : us.toFixed(1) + ' µs';
  const framework = (i) => { if (nKind[i] !== 1) return 'region'; const o = S[nOp[i]]; const d = o.indexOf('.'); return d > 0 ? o.slice(0, d) : o; };
  const nodeByName = new Map();
  for (let i = 0; i < NN; i++) nodeByName.set(name(i), i);

  // ---- state --------------------------------------------------------------------------------
  let showConsts = false, overlay = 'none', selected = -1, selectedGroup = -1;
  let matches = [], matchPos = -1, matchSet = null;
  const view = { x: 0, y: 0, k: 1 };
  let pos = null;        // item key -> [x, y, w, h] (absolute), for the drawn items
  let rootBox = null;
  // Item keys: node i -> i; group g (drawn collapsed or as a frame) -> NN + g; a shown constant
  // -> NN + NG + k (pseudo[k] = [consumer node, constant index]).
  let pseudo = [];
  const rep = new Int32Array(NG);
  const timing = { parse: TParsed - T0, firstRender: null, lastLayout: null, lastExpand: null };

  function computeRep() {
    rep[0] = -1;
    for (let k = 1; k < gOrder.length; k++) {
      const g = gOrder[k], p = gParent[g];
      rep[g] = rep[p] !== -1 ? rep[p] : (gExpanded[g] ? -1 : g);
    }
  }
  const itemOf = (n) => { const r = rep[nGroup[n]]; return r === -1 ? n : NN + r; };
  const containerOf = (key) => key < NN ? nGroup[key] : (key < NN + NG ? gParent[key - NN] : nGroup[pseudo[key - NN - NG][0]]);
  function isVisibleNode(i) { return rep[nGroup[i]] === -1; }

  // ---- layout -------------------------------------------------------------------------------
  const NODE_W = 170, NODE_H = 38, IO_H = 30, GROUP_W = 180, GROUP_H = 44, CONST_W = 150, CONST_H = 26;
  const GAP_X = 18, GAP_Y = 30, PAD = 12, HEAD = 22;
  let groupEdges, drawEdges;

  function collectEdges() {
    groupEdges = new Map(); drawEdges = new Map();
    const M = NN + NG + pseudo.length + 1;
    const seen = new Set();
    const add = (a, b) => {
      const dk = a * M + b;
      if (!drawEdges.has(dk)) drawEdges.set(dk, [a, b]);
      let ca = containerOf(a), cb = containerOf(b), ia = a, ib = b;
      while (ca !== cb) {
        if (gDepth[ca] >= gDepth[cb]) { ia = NN + ca; ca = gParent[ca]; } else { ib = NN + cb; cb = gParent[cb]; }
      }
      if (ia === ib) return;
      const k = ia * M + ib;
      if (seen.has(k)) return;
      seen.add(k);
      let list = groupEdges.get(ca);
      if (!list) groupEdges.set(ca, list = []);
      list.push(ia, ib);
    };
    for (let v = 0; v < NN; v++) {
      const ins = nIns[v];
      if (ins.length === 0) continue;
      const b = itemOf(v);
      for (let k = 0; k < ins.length; k++) { const a = itemOf(ins[k]); if (a !== b) add(a, b); }
    }
    for (let k = 0; k < pseudo.length; k++) add(NN + NG + k, pseudo[k][0]);
  }

  function orderOf(key) { return key < NN ? key : key < NN + NG ? gFirst[key - NN] : pseudo[key - NN - NG][0] - 0.5; }

  // Lays out group g's children; returns its size. rel: key -> [x, y, w, h] relative to g.
  function layoutGroup(g, rel, sizes) {
    const items = [];
    for (const n of gNodes[g]) {
      items.push(n);
      if (showConsts) for (let c = 0; c < nConsts[n].length; c++) { pseudo.push([n, nConsts[n][c]]); items.push(NN + NG + pseudo.length - 1); }
    }
    for (const c of gGroups[g]) items.push(NN + c);
    return items;
  }

  function layoutAll() {
    const t = performance.now();
    computeRep();
    pseudo = [];
    // Items per expanded group (pseudo constants are created here, before the edges are lifted).
    const itemsOf = new Map();
    const stack = [0];
    while (stack.length) {
      const g = stack.pop();
      const items = layoutGroup(g);
      itemsOf.set(g, items);
      for (const c of gGroups[g]) if (gExpanded[c]) stack.push(c);
    }
    collectEdges();
    const rel = new Map(), size = new Map();
    // Children first: post-order over expanded groups.
    const post = [];
    (function visit(g) { for (const c of gGroups[g]) if (gExpanded[c]) visit(c); post.push(g); })(0);
    for (const g of post) size.set(g, placeGroup(g, itemsOf.get(g), rel, size));
    // Absolute positions.
    pos = new Map();
    const root = size.get(0);
    rootBox = [0, 0, root[0], root[1]];
    (function absolute(g, ox, oy) {
      for (const key of itemsOf.get(g)) {
        const r = rel.get(key);
        const a = [ox + r[0], oy + r[1], r[2], r[3]];
        pos.set(key, a);
        if (key >= NN && key < NN + NG && gExpanded[key - NN]) absolute(key - NN, a[0], a[1] + HEAD);
      }
    })(0, 0, 0);
    timing.lastLayout = performance.now() - t;
  }

  function itemSize(key, size) {
    if (key < NN) return [NODE_W, nKind[key] === 1 ? NODE_H : IO_H];
    if (key < NN + NG) { const g = key - NN; if (gExpanded[g]) { const s = size.get(g); return [s[0], s[1] + HEAD]; } return [GROUP_W, GROUP_H]; }
    return [CONST_W, CONST_H];
  }

  function placeGroup(g, items, rel, size) {
    items.sort((a, b) => orderOf(a) - orderOf(b));
    const preds = new Map(), succs = new Map();
    const list = groupEdges.get(g) || EMPTY;
    for (let k = 0; k < list.length; k += 2) {
      const a = list[k], b = list[k + 1];
      if (!preds.has(b)) preds.set(b, []); preds.get(b).push(a);
      if (!succs.has(a)) succs.set(a, []); succs.get(a).push(b);
    }
    // Layers: longest path from the sources, in the (topological) item order.
    const layer = new Map();
    let maxLayer = 0;
    for (const key of items) {
      if (key >= NN + NG) continue;
      let l = 0;
      for (const p of preds.get(key) || EMPTY) { const lp = layer.get(p); if (lp !== undefined && lp + 1 > l) l = lp + 1; }
      if (g === 0 && key < NN && nKind[key] === 2) l = -1;  // outputs: set below
      layer.set(key, l);
      if (l > maxLayer) maxLayer = l;
    }
    let shift = 0;
    for (const key of items) {
      if (key < NN && g === 0 && nKind[key] === 2) layer.set(key, maxLayer + 1);
      if (key >= NN + NG) {  // a shown constant sits one layer above the node that reads it
        const l = layer.get(pseudo[key - NN - NG][0]) - 1;
        layer.set(key, l);
        if (l < 0) shift = 1;
      }
    }
    const layers = [];
    for (const key of items) {
      const l = layer.get(key) + shift;
      while (layers.length <= l) layers.push([]);
      layers[l].push(key);
    }
    // Order and x: each item wants to sit under the mean of its predecessors.
    const cx = new Map(), order = new Map();
    let y = PAD, width = 0;
    for (const row of layers) {
      if (row.length === 0) continue;
      const want = new Map();
      for (const key of row) {
        const ps = preds.get(key);
        let s = 0, n = 0;
        if (ps) for (const p of ps) { const x = cx.get(p); if (x !== undefined) { s += x; n++; } }
        if (key >= NN + NG) { const x = cx.get(pseudo[key - NN - NG][0]); if (x !== undefined) { s += x; n++; } }
        want.set(key, n ? s / n : null);
      }
      row.forEach((key, i) => order.set(key, i));
      row.sort((a, b) => {
        const wa = want.get(a), wb = want.get(b);
        if (wa === null || wb === null) return order.get(a) - order.get(b);
        return wa - wb || order.get(a) - order.get(b);
      });
      let x = PAD, h = 0, dev = 0, nd = 0;
      const sz = row.map((key) => itemSize(key, size));
      const xs = [];
      row.forEach((key, i) => {
        const w = sz[i][0], wnt = want.get(key);
        const left = wnt === null ? x : Math.max(x, wnt - w / 2);
        xs.push(left);
        if (wnt !== null) { dev += left + w / 2 - wnt; nd++; }
        x = left + w + GAP_X;
        if (sz[i][1] > h) h = sz[i][1];
      });
      const back = nd ? dev / nd : 0;  // pull the row back towards where it wants to be
      row.forEach((key, i) => {
        const left = Math.max(PAD, xs[i] - back);
        const r = [left, y, sz[i][0], sz[i][1]];
        rel.set(key, r);
        cx.set(key, left + sz[i][0] / 2);
      });
      // Packing after the pull-back: keep order, no overlap.
      let right = -Infinity;
      for (let i = 0; i < row.length; i++) {
        const r = rel.get(row[i]);
        if (r[0] < right + GAP_X) { r[0] = right + GAP_X; cx.set(row[i], r[0] + r[2] / 2); }
        right = r[0] + r[2];
        if (right > width) width = right;
        r[1] = y + (h - r[3]) / 2;
      }
      y += h + GAP_Y;
    }
    return [Math.max(width + PAD, g === 0 ? 0 : GROUP_W), Math.max(y - GAP_Y + PAD, 30)];
  }

  // ---- drawing ------------------------------------------------------------------------------
  const el = (tag, attrs, parent) => {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  };
  // Control characters in names (a NUL in a module name) show as \xNN, as in the DOT output.
  const visible = (s) => s.replace(/[\x00-\x1f\x7f]/g, (c) => '\\x' + c.charCodeAt(0).toString(16).padStart(2, '0'));
  const clip = (s, n) => { s = visible(s); return s.length > n ? s.slice(0, n - 1) + '…' : s; };
  const text = (parent, x, y, s, cls) => { const t = el('text', { x, y }, parent); if (cls) t.setAttribute('class', cls); t.textContent = s; return t; };

  let maxDur = 0;
  for (let i = 0; i < NN; i++) if (nDur[i] > maxDur) maxDur = nDur[i];
  const PALETTE = ['#8dd3c7', '#ffffb3', '#bebada', '#fb8072', '#80b1d3', '#fdb462', '#b3de69', '#fccde5', '#d9d9d9', '#bc80bd', '#ccebc5', '#ffed6f'];
  const FW = { torch: '#f6a77a', numpy: '#8ab6e8', jax: '#a5d6a7', region: '#e0e0e0', ivytrace: '#d7b8f3' };
  function hashColor(s) { let h = 0; for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0; return PALETTE[Math.abs(h) % PALETTE.length]; }
  function timeColor(us, max) {
    if (!(max > 0) || !(us > 0)) return '#f7fbff';
    const f = Math.min(1, Math.log1p(us) / Math.log1p(max));
    const r = Math.round(255 - f * (255 - 215)), gg = Math.round(247 - f * (247 - 48)), b = Math.round(236 - f * (236 - 31));
    return `rgb(${r},${gg},${b})`;
  }
  function fillFor(key) {
    if (overlay === 'none') return null;
    if (key >= NN + NG) return null;
    if (key >= NN) {
      const g = key - NN;
      if (overlay === 'time') return timeColor(gDur[g], maxGroupDur());
      return null;
    }
    if (overlay === 'time') return timeColor(nDur[key], maxDur);
    if (overlay === 'kind') return nKind[key] === 1 ? hashColor(opLabel(key)) : null;
    const f = framework(key);
    return FW[f] || hashColor(f);
  }
  let _mgd = null;
  function maxGroupDur() {
    if (_mgd === null) { _mgd = 0; for (let g = 1; g < NG; g++) if (gDur[g] > _mgd) _mgd = gDur[g]; }
    return _mgd;
  }

  function render() {
    const lg = $('layer-groups'), le = $('layer-edges'), ln = $('layer-nodes');
    lg.textContent = ''; le.textContent = ''; ln.textContent = '';
    const fG = document.createDocumentFragment(), fE = document.createDocumentFragment(), fN = document.createDocumentFragment();
    const groupsByDepth = [];
    let drawnNodes = 0;
    for (const [key, r] of pos) {
      if (key < NN) { drawNode(fN, key, r); drawnNodes++; }
      else if (key < NN + NG) { const g = key - NN; (groupsByDepth[gDepth[g]] = groupsByDepth[gDepth[g]] || []).push([g, r]); }
      else drawConst(fN, key, r);
    }
    for (const list of groupsByDepth) if (list) for (const [g, r] of list) drawGroup(gExpanded[g] ? fG : fN, g, r);
    for (const [, e] of drawEdges) {
      const a = pos.get(e[0]), b = pos.get(e[1]);
      if (!a || !b) continue;
      const x1 = a[0] + a[2] / 2, y1 = a[1] + a[3], x2 = b[0] + b[2] / 2, y2 = b[1];
      const dy = Math.max(20, Math.abs(y2 - y1) / 2);
      const p = el('path', { d: `M${x1},${y1} C${x1},${y1 + dy} ${x2},${y2 - dy} ${x2},${y2}`, class: 'edge', 'marker-end': 'url(#arrow)' }, fE);
      p.dataset.from = e[0]; p.dataset.to = e[1];
    }
    lg.appendChild(fG); le.appendChild(fE); ln.appendChild(fN);
    $('status').textContent = `${NN.toLocaleString()} nodes in ${(NG - 1).toLocaleString()} module calls; drawn: ${drawnNodes} nodes, ${pos.size - drawnNodes} modules`;
    drawLegend();
    highlightSelection();
  }

  function classFor(i) {
    let c = 'node';
    if (nKind[i] === 0) c += ' input'; else if (nKind[i] === 2) c += ' output'; else if (!S[nCanon[i]]) c += ' unknown';
    if (nDiff[i] === 1) c += ' diff-added'; else if (nDiff[i] === 2) c += ' diff-removed'; else if (nDiff[i] === 3) c += ' diff-changed';
    if (matchSet && matchSet.has(i)) c += ' match';
    if (matchPos >= 0 && matches[matchPos] === i) c += ' current';
    return c;
  }

  function drawNode(parent, i, r) {
    const g = el('g', { class: classFor(i), transform: `translate(${r[0]},${r[1]})` }, parent);
    g.dataset.id = i; g.dataset.name = name(i);
    const rect = el('rect', { width: r[2], height: r[3] }, g);
    const f = fillFor(i);
    if (f && !nDiff[i]) rect.style.fill = f;
    const title = el('title', {}, g);
    title.textContent = name(i) + ' ' + S[nOp[i]] + (S[nFile[i]] ? `  ${S[nFile[i]]}:${nLine[i]}` : '');
    if (nKind[i] === 1) {
      text(g, 6, 14, clip(name(i) + ' ' + opLabel(i), 27));
      text(g, 6, 29, clip(S[nDtype[i]] + S[nShape[i]] + (nConsts[i].length && !showConsts ? `  +${nConsts[i].length}c` : ''), 30), 'sub');
    } else {
      text(g, 10, 13, clip(S[nOp[i]], 26));
      text(g, 10, 25, clip(S[nDtype[i]] + S[nShape[i]], 28), 'sub');
    }
  }

  function drawConst(parent, key, r) {
    const [n, c] = pseudo[key - NN - NG];
    const g = el('g', { class: 'node const', transform: `translate(${r[0]},${r[1]})` }, parent);
    g.dataset.constant = S[D.C[c][0]]; g.dataset.consumer = n;
    el('rect', { width: r[2], height: r[3] }, g);
    text(g, 5, 11, clip(S[D.C[c][0]], 25));
    text(g, 5, 22, clip(S[D.C[c][1]], 26), 'sub');
  }

  function drawGroup(parent, g, r) {
    const exp = !!gExpanded[g];
    let cls = 'group ' + (exp ? 'expanded' : 'collapsed');
    if (gDiff[g] && !exp) cls += ' has-diff';
    if (!exp && matchSet && groupHasMatch(g)) cls += ' match';
    const e = el('g', { class: cls, transform: `translate(${r[0]},${r[1]})` }, parent);
    e.dataset.group = g; e.dataset.path = gPath(g);
    const rect = el('rect', { width: r[2], height: r[3] }, e);
    const f = exp ? null : fillFor(NN + g);
    if (f) rect.style.fill = f;
    el('title', {}, e).textContent = gPath(g) + ` (${gCount[g]} nodes)`;
    if (exp) {
      const head = el('g', { class: 'head' }, e);
      el('rect', { width: r[2], height: HEAD, fill: 'transparent' }, head);
      text(head, 8, 15, '▾ ' + clip(S[gName[g]], Math.max(8, Math.floor(r[2] / 7))));
    } else {
      text(e, 8, 17, '▸ ' + clip(S[gName[g]], 22));
      let sub = gCount[g] === 1 ? '1 node' : `${gCount[g]} nodes`;
      if (gDur[g] > 0) sub += ', ' + fmtUs(gDur[g]);
      if (DIFF && gDiff[g]) sub += `, ${gDiff[g]} diff`;
      text(e, 8, 33, clip(sub, 28), 'sub');
    }
  }

  let groupMatchCache = null;
  function groupHasMatch(g) {
    if (!groupMatchCache) {
      groupMatchCache = new Uint8Array(NG);
      for (const i of matches) { let h = nGroup[i]; while (h > 0 && !groupMatchCache[h]) { groupMatchCache[h] = 1; h = gParent[h]; } }
    }
    return groupMatchCache[g] === 1;
  }

  function drawLegend() {
    const L = $('legend');
    L.textContent = '';
    const sw = (color, label) => { const s = document.createElement('span'); s.className = 'sw'; s.style.background = color; L.appendChild(s); L.appendChild(document.createTextNode(label + ' ')); };
    if (DIFF) { sw('#c8f0c8', 'added'); sw('#f8d0d0', 'removed'); sw('#fde9b8', 'changed'); }
    if (overlay === 'time') {
      L.appendChild(document.createTextNode(' time (log scale):'));
      sw(timeColor(0, 1), '0'); sw(timeColor(maxDur, maxDur), fmtUs(maxDur) + ' per node');
      if (maxDur === 0) L.appendChild(document.createTextNode(' (no durations recorded)'));
    } else if (overlay === 'kind') {
      const seen = new Map();
      for (const key of pos.keys()) if (key < NN && nKind[key] === 1) { const k = opLabel(key); seen.set(k, (seen.get(k) || 0) + 1); }
      [...seen.entries()].sort((a, b) => b[1] - a[1]).slice(0, 12).forEach(([k]) => sw(hashColor(k), k));
    } else if (overlay === 'framework') {
      const seen = new Set();
      for (let i = 0; i < NN; i++) seen.add(framework(i));
      for (const f of seen) sw(FW[f] || hashColor(f), f);
    }
  }

  // ---- view: pan, zoom, fit ------------------------------------------------------------------
  const svg = $('canvas'), vp = $('viewport');
  el('defs', {}, svg).innerHTML = '<marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#8a8f99"/></marker>';
  function applyView() { vp.setAttribute('transform', `translate(${view.x},${view.y}) scale(${view.k})`); }
  function fit() {
    const W = svg.clientWidth || 800, H = svg.clientHeight || 600;
    const k = Math.min(W / (rootBox[2] + 20), H / (rootBox[3] + 20), 1.5);
    view.k = k; view.x = (W - rootBox[2] * k) / 2; view.y = Math.max(10, (H - rootBox[3] * k) / 2);
    applyView();
  }
  function centerOn(key, minK) {
    const r = pos.get(key);
    if (!r) return;
    const W = svg.clientWidth || 800, H = svg.clientHeight || 600;
    if (minK && view.k < minK) view.k = minK;
    view.x = W / 2 - (r[0] + r[2] / 2) * view.k; view.y = H / 2 - (r[1] + r[3] / 2) * view.k;
    applyView();
  }
  function zoomAt(f, cx, cy) {
    const k = Math.min(8, Math.max(0.01, view.k * f));
    view.x = cx - (cx - view.x) * (k / view.k); view.y = cy - (cy - view.y) * (k / view.k); view.k = k;
    applyView();
  }
  svg.addEventListener('wheel', (e) => { e.preventDefault(); const b = svg.getBoundingClientRect(); zoomAt(Math.exp(-e.deltaY * 0.0015), e.clientX - b.left, e.clientY - b.top); }, { passive: false });
  let drag = null;
  svg.addEventListener('mousedown', (e) => { drag = { x: e.clientX, y: e.clientY, vx: view.x, vy: view.y, moved: false }; });
  window.addEventListener('mousemove', (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) { drag.moved = true; svg.classList.add('dragging'); }
    view.x = drag.vx + dx; view.y = drag.vy + dy; applyView();
  });
  window.addEventListener('mouseup', () => { svg.classList.remove('dragging'); setTimeout(() => { drag = null; }, 0); });

  // ---- interaction --------------------------------------------------------------------------
  function relayout(keepKey) {
    const before = keepKey !== undefined ? pos.get(keepKey) : null;
    const sx = before ? before[0] * view.k + view.x : 0, sy = before ? before[1] * view.k + view.y : 0;
    layoutAll();
    render();
    const after = keepKey !== undefined ? pos.get(keepKey) : null;
    if (before && after) { view.x = sx - after[0] * view.k; view.y = sy - after[1] * view.k; applyView(); }  // keep it in place
  }
  function setExpanded(g, on) {
    const t = performance.now();
    gExpanded[g] = on ? 1 : 0;
    relayout(NN + g);
    timing.lastExpand = performance.now() - t;
  }
  function expandTo(i) {  // expand every group above node i; returns whether anything changed
    let changed = false;
    for (let g = nGroup[i]; g > 0; g = gParent[g]) if (!gExpanded[g]) { gExpanded[g] = 1; changed = true; }
    return changed;
  }
  function expandGroupPath(g) { let changed = false; for (let h = gParent[g]; h > 0; h = gParent[h]) if (!gExpanded[h]) { gExpanded[h] = 1; changed = true; } return changed; }

  svg.addEventListener('click', (e) => {
    if (drag && drag.moved) return;
    const nodeEl = e.target.closest('.node');
    if (nodeEl && nodeEl.dataset.id !== undefined) { select(+nodeEl.dataset.id, false); return; }
    if (nodeEl && nodeEl.dataset.consumer !== undefined) { select(+nodeEl.dataset.consumer, false); return; }
    const groupEl = e.target.closest('.group');
    if (groupEl) {
      const g = +groupEl.dataset.group;
      if (gExpanded[g] && !e.target.closest('.head')) return;
      selectGroup(g);
      setExpanded(g, !gExpanded[g]);
    }
  });

  function select(i, jump) {
    selected = i; selectedGroup = -1;
    if (jump) { if (expandTo(i) || !pos.has(i)) relayout(); centerOn(i, 0.6); }
    highlightSelection();
    showDetails(i);
    history.replaceState(null, '', '#node=' + encodeURIComponent(name(i)));
  }
  function selectGroup(g) {
    selected = -1; selectedGroup = g;
    showGroupDetails(g);
    history.replaceState(null, '', '#module=' + encodeURIComponent(gPath(g)));
  }
  function highlightSelection() {
    for (const e of document.querySelectorAll('.selected')) e.classList.remove('selected');
    for (const e of document.querySelectorAll('.edge.hl')) e.classList.remove('hl');
    if (selected >= 0) {
      const e = document.querySelector(`.node[data-id="${selected}"]`);
      if (e) e.classList.add('selected');
      for (const p of document.querySelectorAll(`.edge[data-to="${selected}"], .edge[data-from="${selected}"]`)) p.classList.add('hl');
    }
    if (selectedGroup >= 0) { const e = document.querySelector(`.group[data-group="${selectedGroup}"]`); if (e) e.classList.add('selected'); }
  }

  function row(table, label, value) {
    const tr = document.createElement('tr');
    const a = document.createElement('td'); a.textContent = label;
    const b = document.createElement('td');
    if (value instanceof Node) b.appendChild(value); else b.textContent = visible(String(value));
    tr.appendChild(a); tr.appendChild(b); table.appendChild(tr);
  }
  function refList(ids) {
    const span = document.createElement('span');
    ids.slice(0, 50).forEach((j, k) => {
      if (k) span.appendChild(document.createTextNode(', '));
      const a = document.createElement('a'); a.className = 'ref'; a.textContent = name(j) + ' ' + opLabel(j);
      a.addEventListener('click', () => select(j, true));
      span.appendChild(a);
    });
    if (ids.length > 50) span.appendChild(document.createTextNode(` … (${ids.length} in all)`));
    if (!ids.length) span.textContent = '-';
    return span;
  }
  function showDetails(i) {
    const d = $('details');
    d.textContent = '';
    const h = document.createElement('h3');
    h.textContent = visible(name(i) + '  ' + S[nOp[i]]);
    d.appendChild(h);
    const t = document.createElement('table');
    t.id = 'details-table';
    const kinds = ['region input', 'op', 'region output'];
    row(t, 'kind', kinds[nKind[i]]);
    if (nKind[i] === 1) {
      row(t, 'op', S[nOp[i]]);
      row(t, 'canonical', S[nCanon[i]] || '(not in schemas/)');
      row(t, 'arguments', S[nArgs[i]] || '()');
    }
    row(t, 'output', S[nDtype[i]] + S[nShape[i]]);
    if (S[nFile[i]]) row(t, 'source', S[nFile[i]] + ':' + nLine[i]);
    row(t, 'module', gPath(nGroup[i]) || '(top level)');
    if (nKind[i] === 1) row(t, 'duration', nDur[i] ? fmtUs(nDur[i]) : '(not recorded)');
    row(t, 'inputs', refList(nIns[i]));
    row(t, 'used by', refList(nOuts[i]));
    if (nConsts[i].length) {
      const ul = document.createElement('div');
      for (const c of nConsts[i]) { const div = document.createElement('div'); div.className = 'const-item'; div.textContent = S[D.C[c][0]] + ': ' + S[D.C[c][1]]; ul.appendChild(div); }
      row(t, 'constants', ul);
    }
    if (DIFF) {
      row(t, 'diff', ['unchanged', 'added (only in ' + D.diff.b + ')', 'removed (only in ' + D.diff.a + ')', 'changed'][nDiff[i]]);
      if (S[nBefore[i]]) row(t, nDiff[i] === 3 ? 'before' : 'note', S[nBefore[i]]);
    }
    const link = document.createElement('a');
    link.href = '#node=' + encodeURIComponent(name(i)); link.textContent = 'link to this node';
    row(t, 'link', link);
    d.appendChild(t);
  }
  function showGroupDetails(g) {
    const d = $('details');
    d.textContent = '';
    const h = document.createElement('h3'); h.textContent = visible(gPath(g)); d.appendChild(h);
    const t = document.createElement('table');
    row(t, 'kind', 'module call');
    row(t, 'nodes', String(gCount[g]));
    row(t, 'time', gDur[g] ? fmtUs(gDur[g]) : '(not recorded)');
    row(t, 'modules', String(gGroups[g].length));
    if (DIFF) row(t, 'differences', String(gDiff[g]));
    d.appendChild(t);
  }

  // ---- search -------------------------------------------------------------------------------
  function runSearch(q) {
    matches = []; matchPos = -1; matchSet = null; groupMatchCache = null;
    q = q.trim();
    if (!q) { $('count').textContent = ''; render(); return; }
    let field = null;
    const m = /^(name|op|module):\s*(.*)$/.exec(q);
    if (m) { field = m[1]; q = m[2]; }
    let test;
    const rx = /^\/(.*)\/([imsu]*)$/.exec(q);
    if (rx) {
      let re;
      try { re = new RegExp(rx[1], rx[2]); } catch (err) { $('count').textContent = 'bad regex'; return; }
      test = (s) => re.test(s);
    } else {
      const lq = q.toLowerCase();
      test = (s) => s.toLowerCase().includes(lq);
    }
    for (let i = 0; i < NN; i++) {
      if ((!field || field === 'name') && test(name(i))) { matches.push(i); continue; }
      if ((!field || field === 'op') && (test(S[nOp[i]]) || test(S[nCanon[i]]))) { matches.push(i); continue; }
      if ((!field || field === 'module') && nGroup[i] && test(gPath(nGroup[i]))) { matches.push(i); continue; }
    }
    matchSet = new Set(matches);
    $('count').textContent = matches.length ? `0/${matches.length}` : 'no match';
    render();
  }
  function step(d) {
    if (!matches.length) return;
    matchPos = (matchPos + d + matches.length) % matches.length;
    $('count').textContent = `${matchPos + 1}/${matches.length}`;
    const i = matches[matchPos];
    select(i, true);
    render();
  }
  let searchTimer = null;
  $('search').addEventListener('input', (e) => { clearTimeout(searchTimer); searchTimer = setTimeout(() => runSearch(e.target.value), 150); });
  $('search').addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      if (searchTimer) { clearTimeout(searchTimer); searchTimer = null; runSearch(e.target.value); }
      step(e.shiftKey ? -1 : 1);
    } else if (e.key === 'Escape') { e.target.value = ''; runSearch(''); e.target.blur(); }
  });
  $('next').addEventListener('click', () => step(1));
  $('prev').addEventListener('click', () => step(-1));

  // ---- toolbar ------------------------------------------------------------------------------
  const VISIBLE_LIMIT = 3000;  // "expand one level" stops before drawing more boxes than this
  function expandLevel() {
    let visible = pos.size;
    const todo = [];
    for (const key of pos.keys()) if (key >= NN && key < NN + NG && !gExpanded[key - NN]) todo.push(key - NN);
    todo.sort((a, b) => gFirst[a] - gFirst[b]);
    for (const g of todo) {
      const add = gNodes[g].length + gGroups[g].length - 1;
      if (visible + add > VISIBLE_LIMIT) break;
      gExpanded[g] = 1; visible += add;
    }
    relayout(); fit();
  }
  function collapseAll() { gExpanded.fill(0); gExpanded[0] = 1; openDefault(); relayout(); fit(); }
  $('fit').addEventListener('click', fit);
  $('expand-level').addEventListener('click', expandLevel);
  $('collapse-all').addEventListener('click', collapseAll);
  $('show-consts').addEventListener('change', (e) => { showConsts = e.target.checked; relayout(); });
  $('overlay').addEventListener('change', (e) => { overlay = e.target.value; render(); });
  $('help-btn').addEventListener('click', () => { $('help').hidden = !$('help').hidden; });
  for (const b of document.querySelectorAll('.panel .close')) b.addEventListener('click', () => { b.closest('.panel').hidden = true; });

  // Time table: per op and per module, sortable by any column.
  let tableTab = 'op', tableSort = { col: 2, desc: true };
  function tableRows() {
    if (tableTab === 'op') {
      const by = new Map();
      for (let i = 0; i < NN; i++) {
        if (nKind[i] !== 1) continue;
        const k = S[nOp[i]];
        let r = by.get(k); if (!r) by.set(k, r = [k, 0, 0]);
        r[1]++; r[2] += nDur[i];
      }
      return [...by.values()].map((r) => [r[0], r[1], r[2], r[2] / r[1]]);
    }
    const rows = [];
    for (let g = 1; g < NG; g++) rows.push([gPath(g), gCount[g], gDur[g], gCount[g] ? gDur[g] / gCount[g] : 0, g]);
    return rows;
  }
  function drawTable() {
    const heads = [tableTab === 'op' ? 'op' : 'module', 'nodes', 'total', 'mean'];
    const thead = $('time-table').tHead, tbody = $('time-table').tBodies[0];
    thead.textContent = ''; tbody.textContent = '';
    const tr = document.createElement('tr');
    heads.forEach((h, c) => {
      const th = document.createElement('th');
      th.textContent = h + (tableSort.col === c ? (tableSort.desc ? ' ▼' : ' ▲') : '');
      if (c) th.className = 'num';
      th.dataset.col = c;
      th.addEventListener('click', () => { tableSort = { col: c, desc: tableSort.col === c ? !tableSort.desc : c > 0 }; drawTable(); });
      tr.appendChild(th);
    });
    thead.appendChild(tr);
    const rows = tableRows();
    const c = tableSort.col, s = tableSort.desc ? -1 : 1;
    rows.sort((a, b) => (a[c] < b[c] ? -1 : a[c] > b[c] ? 1 : 0) * s);
    const frag = document.createDocumentFragment();
    for (const r of rows.slice(0, 2000)) {
      const t = document.createElement('tr');
      [r[0], String(r[1]), fmtUs(r[2]), fmtUs(r[3])].forEach((v, k) => { const td = document.createElement('td'); td.textContent = v; if (k) td.className = 'num'; t.appendChild(td); });
      t.addEventListener('click', () => {
        $('table-panel').hidden = true;
        if (tableTab === 'op') { $('search').value = 'op:/^' + r[0].replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$/'; runSearch($('search').value); step(1); }
        else jumpToGroup(r[4]);
      });
      frag.appendChild(t);
    }
    tbody.appendChild(frag);
  }
  function jumpToGroup(g) {
    if (expandGroupPath(g) || !pos.has(NN + g)) relayout();
    selectGroup(g); highlightSelection(); centerOn(NN + g, 0.5);
  }
  $('table-btn').addEventListener('click', () => { const p = $('table-panel'); p.hidden = !p.hidden; if (!p.hidden) drawTable(); });
  for (const b of document.querySelectorAll('#table-panel .tab')) {
    b.addEventListener('click', () => {
      tableTab = b.dataset.tab; tableSort = { col: 2, desc: true };
      for (const x of document.querySelectorAll('#table-panel .tab')) x.classList.toggle('active', x === b);
      drawTable();
    });
  }

  // Keyboard shortcuts (not while typing in the search box).
  const OVERLAYS = ['none', 'time', 'kind', 'framework'];
  window.addEventListener('keydown', (e) => {
    if (e.target.tagName === 'INPUT' || e.target.tagName === 'SELECT' || e.ctrlKey || e.metaKey || e.altKey) return;
    const W = svg.clientWidth, H = svg.clientHeight;
    switch (e.key) {
      case '/': e.preventDefault(); $('search').focus(); $('search').select(); break;
      case 'n': step(1); break;
      case 'N': case 'p': step(-1); break;
      case 'f': fit(); break;
      case '+': case '=': zoomAt(1.25, W / 2, H / 2); break;
      case '-': zoomAt(0.8, W / 2, H / 2); break;
      case 'ArrowLeft': view.x += 60; applyView(); break;
      case 'ArrowRight': view.x -= 60; applyView(); break;
      case 'ArrowUp': view.y += 60; applyView(); break;
      case 'ArrowDown': view.y -= 60; applyView(); break;
      case 'e': expandLevel(); break;
      case 'c': collapseAll(); break;
      case 'k': $('show-consts').checked = !showConsts; showConsts = !showConsts; relayout(); break;
      case 't': overlay = OVERLAYS[(OVERLAYS.indexOf(overlay) + 1) % OVERLAYS.length]; $('overlay').value = overlay; render(); break;
      case 'm': $('table-btn').click(); break;
      case '?': $('help').hidden = !$('help').hidden; break;
      case 'Escape':
        selected = -1; selectedGroup = -1; highlightSelection();
        for (const p of document.querySelectorAll('.panel')) p.hidden = true;
        break;
      default: return;
    }
  });

  // ---- diff summary -------------------------------------------------------------------------
  function drawSummary() {
    if (!DIFF) return;
    const s = $('summary');
    const h = document.createElement('h3'); h.textContent = 'Diff'; s.appendChild(h);
    const p = document.createElement('div');
    p.id = 'diff-counts';
    p.textContent = `${D.diff.a} → ${D.diff.b}: ${D.diff.same} unchanged, ${D.diff.changed} changed, ${D.diff.added} added, ${D.diff.removed} removed`;
    s.appendChild(p);
    const list = document.createElement('div'); list.className = 'diff-list';
    let shown = 0;
    for (let i = 0; i < NN && shown < 500; i++) {
      if (!nDiff[i]) continue;
      shown++;
      const div = document.createElement('div');
      const tag = document.createElement('span');
      tag.className = 'tag-' + ['', 'added', 'removed', 'changed'][nDiff[i]];
      tag.textContent = ['', '+', '−', '~'][nDiff[i]] + ' ';
      div.appendChild(tag);
      div.appendChild(document.createTextNode(`${name(i)} ${S[nOp[i]]}  [${gPath(nGroup[i]) || 'top'}]`));
      div.addEventListener('click', () => select(i, true));
      list.appendChild(div);
    }
    s.appendChild(list);
  }

  // ---- start --------------------------------------------------------------------------------
  // Opens collapsed to the top-level modules; a lone module (a model wrapped in one call) opens
  // too, while what is drawn stays small.
  function openDefault() {
    gExpanded[0] = 1;
    for (;;) {
      computeRep();
      let collapsed = [], count = 0;
      for (let k = 1; k < gOrder.length; k++) { const g = gOrder[k]; if (rep[g] === g) collapsed.push(g); }
      for (let k = 0; k < gOrder.length; k++) { const g = gOrder[k]; if (rep[g] === -1) count += gNodes[g].length + gGroups[g].length; }
      if (collapsed.length !== 1 || count + gNodes[collapsed[0]].length + gGroups[collapsed[0]].length > 60) break;
      gExpanded[collapsed[0]] = 1;
    }
  }
  $('title').textContent = (DIFF ? 'diff: ' : '') + D.title;
  openDefault();
  if (DIFF) {  // open the modules that hold differences, while what is drawn stays small
    let budget = 300;
    for (let i = 0; i < NN && budget > 0; i++) if (nDiff[i]) { expandTo(i); budget--; }
  }
  function fromHash() {
    const h = decodeURIComponent(location.hash.slice(1));
    if (h.startsWith('node=')) { const i = nodeByName.get(h.slice(5)); if (i !== undefined) { select(i, true); return true; } }
    if (h.startsWith('module=')) { const p = h.slice(7); for (let g = 1; g < NG; g++) if (gPath(g) === p) { jumpToGroup(g); return true; } }
    return false;
  }
  layoutAll();
  render();
  drawSummary();
  fit();
  fromHash();
  window.addEventListener('hashchange', fromHash);
  requestAnimationFrame(() => requestAnimationFrame(() => {
    timing.firstRender = performance.now();
    document.body.dataset.ready = '1';
  }));
  // For tests and the benchmark: read-only views of the state.
  window.ivy = {
    timing, nodeCount: NN, groupCount: NG - 1,
    drawnNodes: () => document.querySelectorAll('#layer-nodes .node').length,
    expanded: () => { const out = []; for (let g = 1; g < NG; g++) if (gExpanded[g]) out.push(gPath(g)); return out; },
    selected: () => (selected >= 0 ? name(selected) : null),
    matches: () => matches.length,
  };
})();
