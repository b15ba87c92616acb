// viewer.js — khz view's page: the scene's geoms at the poses of the newest
// state (three.js, z up), the server's figures, controls, contact points /
// normals / force arrows, drag-to-push, joint plots, and a recording's
// timeline. Messages: clients/python/khz/view.py.
import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';

const $ = (id) => document.getElementById(id);
let needRender = true;
const host = $('scene');
const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
renderer.setPixelRatio(Math.min(2, window.devicePixelRatio || 1));
host.appendChild(renderer.domElement);
const scene = new THREE.Scene();
scene.background = new THREE.Color(0x30363d);
const camera = new THREE.PerspectiveCamera(45, 1, 0.01, 200);
camera.up.set(0, 0, 1);
camera.position.set(2.2, -2.2, 1.6);
const orbit = new OrbitControls(camera, renderer.domElement);
orbit.target.set(0, 0, 0.4);
orbit.update();
scene.add(new THREE.HemisphereLight(0xffffff, 0x444455, 1.4));
const sun = new THREE.DirectionalLight(0xffffff, 1.6);
sun.position.set(3, -2, 6);
scene.add(sun);

// the viewer's state, readable by tests (window.khz)
const view = {
  model: null, state: null, source: null, bodies: [], frames: 0, rendered: 0, seq: -1,
  history: [], ws: null, replies: [], timeline: null, invalid: [], bannerText: '',
};
view.backgroundRGB = [0x30, 0x36, 0x3d];
window.khz = view;

function resize() {
  const w = host.clientWidth, h = host.clientHeight;
  renderer.setSize(w, h);
  camera.aspect = w / Math.max(1, h);
  camera.updateProjectionMatrix();
  needRender = true;
}
window.addEventListener('resize', resize);
resize();

// ------------------------------------------------------------------ geoms
const bodyRoot = new THREE.Group();
scene.add(bodyRoot);

function geomObject(g, meshes) {
  const [a, b, c] = g.size;
  let geo;
  switch (g.type) {
    case 'sphere': geo = new THREE.SphereGeometry(a, 32, 16); break;
    case 'box': geo = new THREE.BoxGeometry(2 * a, 2 * b, 2 * c); break;
    case 'capsule': geo = new THREE.CapsuleGeometry(a, 2 * b, 8, 24).rotateX(Math.PI / 2); break;
    case 'cylinder': geo = new THREE.CylinderGeometry(a, a, 2 * b, 32).rotateX(Math.PI / 2); break;
    case 'plane': {
      // the half-space z <= 0 of the geom frame: a large tile with a grid
      const grp = new THREE.Group();
      const tile = new THREE.Mesh(new THREE.PlaneGeometry(20, 20),
        new THREE.MeshStandardMaterial({ color: 0x8a9099, roughness: 0.95 }));
      const grid = new THREE.GridHelper(20, 40, 0x5c636c, 0x6c737c);
      grid.rotateX(Math.PI / 2);
      grid.position.z = 0.0005;
      grp.add(tile, grid);
      return grp;
    }
    case 'mesh': {
      const m = meshes[g.mesh];
      if (!m) return null;
      if (m.omitted) {
        // over Describe's mesh bound: its bounding box, scaled
        const lo = m.lower, hi = m.upper;
        geo = new THREE.BoxGeometry(...[0, 1, 2].map((k) => Math.max(1e-4, (hi[k] - lo[k]) * (g.size[k] || 1))));
        geo.translate(...[0, 1, 2].map((k) => 0.5 * (hi[k] + lo[k]) * (g.size[k] || 1)));
        break;
      }
      geo = new THREE.BufferGeometry();
      const v = new Float32Array(m.vertices.length);
      for (let i = 0; i < v.length; i++) v[i] = m.vertices[i] * (g.size[i % 3] || 1);
      geo.setAttribute('position', new THREE.BufferAttribute(v, 3));
      geo.setIndex(m.faces);
      geo.computeVertexNormals();
      break;
    }
    default: return null;
  }
  const [r, gg, bb, al] = g.rgba;
  // a moving scene object left at the scene loader's default grey gets a hue of its own
  const color = g.tint != null && r === 0.6 && gg === 0.6 && bb === 0.6
    ? new THREE.Color().setHSL((g.tint * 0.618034) % 1, 0.45, 0.55) : new THREE.Color(r, gg, bb);
  const mat = new THREE.MeshStandardMaterial({
    color, roughness: 0.6, metalness: 0.05,
    transparent: al < 1, opacity: al, flatShading: g.type === 'mesh',
  });
  return new THREE.Mesh(geo, mat);
}

function buildScene(model) {
  bodyRoot.clear();
  view.bodies = model.bodies.map((name, i) => {
    const grp = new THREE.Group();
    grp.userData.body = i;
    bodyRoot.add(grp);
    return grp;
  });
  // bodies with visual geoms show those; their collision geoms are a toggle (wireframe)
  const hasVisual = new Set(model.geoms.filter((g) => g.visual).map((g) => g.body));
  view.collision = [];
  view.geomObjects = []; // per model geom its three.js object (null: not drawn)
  const moving = new Set(model.joints.map((j) => j.body));
  for (const g of model.geoms) {
    if (moving.has(g.body)) g.tint = g.body;
    const obj = geomObject(g, model.meshes);
    view.geomObjects.push(obj);
    if (!obj) continue;
    if (!g.visual && hasVisual.has(g.body)) {
      obj.traverse((o) => { if (o.material) { o.material.wireframe = true; o.material.color.set(0x7fffd4); } });
      obj.visible = $('show-collision').checked;
      view.collision.push(obj);
    }
    obj.position.set(...g.pos);
    obj.quaternion.set(g.quat[1], g.quat[2], g.quat[3], g.quat[0]);
    obj.traverse((o) => { o.userData.body = g.body; o.userData.plane = g.type === 'plane'; });
    view.bodies[g.body].add(obj);
  }
  // frame the camera on the movable bodies' initial extent (set at the first state)
  view.framed = false;
  // weight scale for force arrows: the median body weight draws 0.25 m
  const w = model.masses.filter((m) => m > 0).map((m) => m * 9.81).sort((a, b) => a - b);
  view.forceScale = 0.25 / (w.length ? w[Math.floor(w.length / 2)] : 10);
}

// a number the state carries: khz view sends non-finite ones (NaN, inf) as null
const finite = (x) => typeof x === 'number' && Number.isFinite(x);

// each body at its pose; a body whose pose is not finite (a blown-up body in a
// recording: null in the message) is not drawn, and listed in view.invalid
function applyPose(pose) {
  view.invalid = [];
  for (let i = 0; i < view.bodies.length && 7 * i + 6 < pose.length; i++) {
    const b = view.bodies[i];
    const p = pose.slice(7 * i, 7 * i + 7);
    b.visible = p.every(finite);
    if (!b.visible) { view.invalid.push(i); continue; }
    b.position.set(p[0], p[1], p[2]);
    b.quaternion.set(p[4], p[5], p[6], p[3]);
  }
}

function frameCamera() {
  // on the moving bodies (those with a joint), from above at about 55 degrees
  const box = new THREE.Box3();
  const moving = new Set(view.model.joints.map((j) => j.body));
  for (let i = 1; i < view.bodies.length; i++) if (moving.has(i)) box.expandByObject(view.bodies[i]);
  if (box.isEmpty()) for (let i = 1; i < view.bodies.length; i++) box.expandByObject(view.bodies[i]);
  if (box.isEmpty()) return;
  const c = box.getCenter(new THREE.Vector3());
  const r = Math.max(0.4, box.getSize(new THREE.Vector3()).length() / 2);
  orbit.target.copy(c);
  camera.position.set(c.x + 0.9 * r, c.y - 1.3 * r, c.z + 2.4 * r);
  camera.far = 50 * r + 50;
  camera.updateProjectionMatrix();
  orbit.update();
}

// --------------------------------------------------------------- contacts
const contactGroup = new THREE.Group();
scene.add(contactGroup);
const pointGeo = new THREE.SphereGeometry(1, 10, 6);
// depth-tested: a contact behind a body (a bin wall, from outside) is not drawn
// on top of it, which made it look outside; its ghost (faint, drawn only where
// something is in front: GreaterDepth) still tells that it is there
const pointMat = new THREE.MeshBasicMaterial({ color: 0xffd23f });
const ghostMat = new THREE.MeshBasicMaterial({
  color: 0xffd23f, transparent: true, opacity: 0.3, depthWrite: false, depthFunc: THREE.GreaterDepth,
});
const normalMat = new THREE.LineBasicMaterial({ color: 0x3fc8ff });
const forceColor = 0xff5a3f;
const contactPool = [];
view.contactPool = contactPool; // (read by the tests)

function showContacts(c) {
  const on = view.source === 'recording' ? $('show-contacts-rec').checked : $('show-contacts').checked;
  const n = on ? c.length / 12 : 0;
  const size = 0.004 * orbit.getDistance();
  while (contactPool.length < n) {
    const dot = new THREE.Mesh(pointGeo, pointMat);
    dot.renderOrder = 10;
    const ghost = new THREE.Mesh(pointGeo, ghostMat);
    ghost.renderOrder = 13;
    ghost.raycast = () => {};
    const nl = new THREE.Line(new THREE.BufferGeometry().setFromPoints(
      [new THREE.Vector3(), new THREE.Vector3(0, 0, 1)]), normalMat);
    nl.renderOrder = 10;
    const arrow = new THREE.ArrowHelper(new THREE.Vector3(0, 0, 1), new THREE.Vector3(), 1, forceColor);
    arrow.renderOrder = 12;
    const grp = new THREE.Group();
    grp.add(dot, ghost, nl, arrow);
    contactPool.push({ grp, dot, ghost, nl, arrow });
    contactGroup.add(grp);
  }
  for (let i = 0; i < contactPool.length; i++) {
    const p = contactPool[i];
    p.grp.visible = i < n;
    if (i >= n) continue;
    const o = 12 * i;
    // (a contact with a non-finite number is not drawn)
    if (!c.slice(o, o + 10).every(finite)) { p.grp.visible = false; continue; }
    const pos = new THREE.Vector3(c[o], c[o + 1], c[o + 2]);
    // the normal (toward body1) and the force on body1; drawn on body2 (both
    // negated) when body1 is the world, so that arrows show what pushes an object
    const sgn = c[o + 10] === 0 ? -1 : 1;
    const nrm = new THREE.Vector3(c[o + 3], c[o + 4], c[o + 5]).multiplyScalar(sgn);
    const f = new THREE.Vector3(c[o + 7], c[o + 8], c[o + 9]).multiplyScalar(sgn);
    p.dot.position.copy(pos);
    p.dot.scale.setScalar(size);
    p.dot.userData.contact = i;
    p.ghost.position.copy(pos);
    p.ghost.scale.setScalar(size);
    p.nl.position.copy(pos);
    p.nl.quaternion.setFromUnitVectors(new THREE.Vector3(0, 0, 1), nrm);
    p.nl.scale.setScalar(5 * size);
    const len = f.length() * view.forceScale;
    p.arrow.visible = len > 1e-4;
    if (p.arrow.visible) {
      p.arrow.position.copy(pos);
      p.arrow.setDirection(f.clone().normalize());
      p.arrow.setLength(len, Math.min(0.3 * len, 3 * size), Math.min(0.15 * len, 1.5 * size));
    }
  }
}

// ------------------------------------------------------------------ panel
const fmtUs = (ns) => (ns / 1000).toFixed(1) + ' µs';
let plotJoints = new Set();

function showModel(m) {
  $('scene-name').textContent = `${m.scene} (${m.source}: ${m.endpoint})`;
  const sel = $('method');
  sel.innerHTML = '';
  for (const name of m.contact_methods) sel.add(new Option(name, name, false, name === m.contact_method));
  $('live-controls').style.display = m.source === 'live' ? '' : 'none';
  $('show-contacts').checked = !!m.publish_contacts;
  $('timeline').style.display = m.source === 'recording' ? 'block' : 'none';
  // 1-dof joints, and a floating base's height (its q z, qd z: world frame)
  view.plotSeries = m.joints.filter((j) => j.nv === 1 || j.type === 'floating').map((j) => (
    j.nv === 1 ? { name: j.name, q: j.q_index, v: j.qd_index }
      : { name: `${j.name} z`, q: j.q_index + 2, v: j.qd_index + 2 }));
  const joints = view.plotSeries;
  plotJoints = new Set(joints.slice(0, 3).map((j) => j.name));
  $('joints').innerHTML = '';
  for (const j of joints) {
    const l = document.createElement('label');
    const cb = document.createElement('input');
    cb.type = 'checkbox';
    cb.checked = plotJoints.has(j.name);
    cb.onchange = () => { cb.checked ? plotJoints.add(j.name) : plotJoints.delete(j.name); sendPlot(); };
    l.append(cb, ' ' + j.name);
    $('joints').append(l);
  }
  showSensorModel(m);
  const rows = m.bodies.map((b, i) => {
    const j = m.joints.find((jj) => jj.body === i);
    return `${i} ${b}${j ? ` — ${j.name} (${j.type}, q[${j.q_index}])` : ''}`;
  });
  $('names').innerHTML = rows.map((r) => `<div>${r.replace(/</g, '&lt;')}</div>`).join('');
}

function showState(s) {
  $('seq').textContent = s.seq;
  $('simtime').textContent = finite(s.sim_time) ? s.sim_time.toFixed(3) : 'not finite';
  const paused = s.paused || s.flags.includes('PAUSED');
  $('mode').textContent = s.mode + (paused ? ' (paused)' : '');
  $('rate').textContent = `${s.rate_hz} Hz` + (s.measured_hz != null ? `, measured ${s.measured_hz.toFixed(0)} Hz` : '');
  const h = (x) => (x && x.count ? ` (p50 ${fmtUs(x.p50)}, p99 ${fmtUs(x.p99)}, max ${fmtUs(x.max)})` : '');
  const srv = s.server || {};
  $('lateness').textContent = fmtUs(s.stats.lateness_ns) + h(srv.lateness);
  $('compute').textContent = fmtUs(s.stats.compute_ns) + h(srv.compute);
  $('clients').textContent = srv.clients != null ? `${srv.clients} seen, ${srv.rejected} messages rejected` : '–';
  $('overruns').textContent = `${s.stats.overruns} (${s.stats.missed} missed), ${s.stats.states_dropped} states dropped`;
  $('overruns').className = s.stats.overruns ? 'warn' : '';
  $('ncontacts').textContent = `${s.contacts.length / 12} points, method ${s.contact_method}`;
  // bodies with a non-finite pose (not drawn) are said here and in the status line
  const bad = (view.invalid || []).map((i) => (view.model ? view.model.bodies[i] : String(i)));
  const invalid = bad.length ? `not drawn, pose not finite: ${bad.join(', ')}` : '';
  const w = [...Object.entries(s.warnings).map(([k, v]) => `${k} ${v}`), ...(invalid ? [invalid] : [])].join(', ');
  $('warnings').textContent = w || 'none';
  $('warnings').className = w ? 'bad' : '';
  $('banner').textContent = view.bannerText + (invalid ? ` · ⚠ ${invalid}` : '');
  $('banner').className = invalid ? 'bad' : '';
  const fl = s.flags.filter((f) => f !== 'PAUSED');
  $('flags').textContent = fl.join(' ') || 'none';
  $('flags').className = fl.some((f) => ['WATCHDOG', 'BADSTATE', 'OVERRUN', 'CLAMPED'].includes(f)) ? 'warn' : '';
  if (view.model && $('method').value !== s.contact_method && document.activeElement !== $('method')) $('method').value = s.contact_method;
  if (view.timeline && s.index != null) {
    $('scrub').value = s.index;
    $('tl-pos').textContent = `${s.index + 1} / ${view.timeline.n}`;
  }
}

// ---------------------------------------------------------------- sensors
// the hardware-in-the-loop sensors (docs/hil.md): per sensor its reading (the
// values as published: quantised, noisy, late, faulted), its age (ticks since
// it was sampled) and its fault; a sensor's values can be plotted
// ("sensor readings" in the plot's quantity)
let plotSensors = new Set();
const sensorCells = [];

function showSensorModel(m) {
  const sensors = m.sensors || [];
  $('hil').style.display = sensors.length || (m.drives || []).length ? '' : 'none';
  plotSensors = new Set(sensors.slice(0, 1).map((sn) => sn.name));
  const tb = $('sensors');
  tb.innerHTML = '';
  sensorCells.length = 0;
  if (sensors.length) {
    const head = tb.insertRow();
    for (const t of ['', 'sensor', 'reading', 'age', 'fault']) head.insertCell().textContent = t;
  }
  for (const sn of sensors) {
    const row = tb.insertRow();
    const cb = document.createElement('input');
    cb.type = 'checkbox';
    cb.title = 'plot (quantity: sensor readings)';
    cb.checked = plotSensors.has(sn.name);
    cb.onchange = () => {
      cb.checked ? plotSensors.add(sn.name) : plotSensors.delete(sn.name);
      $('quantity').value = 'sensor';
      sendPlot();
      needRender = true;
    };
    row.insertCell().append(cb);
    const name = row.insertCell();
    name.textContent = sn.name;
    name.title = `${sn.type} on ${sn.object}, every ${sn.rate_divisor} tick(s), latency ${sn.latency_ticks}`;
    const val = row.insertCell();
    val.className = 'val';
    const age = row.insertCell();
    const fault = row.insertCell();
    sensorCells.push({ sn, row, val, age, fault });
  }
  $('hil-note').textContent = sensors.length ? `${sensors.length} sensors (hover a name for its type and rate)` : '';
  $('drive-faults').textContent = '';
}

// the values of sensor i: State.sensor_values[value_index ..+dim] (null: NaN, a dropout)
const fmtReading = (x) => (x == null ? 'NaN' : Math.abs(x) >= 1e4 || (x !== 0 && Math.abs(x) < 1e-3) ? x.toExponential(2) : x.toFixed(4));

function showSensors(s) {
  const hil = s.hil;
  if (!hil || !view.model) return;
  const names = view.model.fault_names || [];
  const period = s.rate_hz > 0 ? 1000 / s.rate_hz : 0;
  sensorCells.forEach((c, i) => {
    const v = hil.values.slice(c.sn.value_index, c.sn.value_index + c.sn.dim);
    c.val.textContent = v.map(fmtReading).join(' ');
    const a = hil.age[i];
    c.age.textContent = a == null ? '–' : `${a} (${(a * period).toFixed(1)} ms)`;
    const f = hil.faults[i] || 0;
    c.fault.textContent = f ? (names[f] || String(f)) : '–';
    c.row.className = f ? 'bad' : '';
  });
  const df = (view.model.drives || []).map((d, i) => [d, hil.drive_faults[i] || 0]).filter(([, f]) => f);
  $('drive-faults').textContent = df.length ? 'drive faults: ' + df.map(([d, f]) => `${d.joint} ${names[f] || f}`).join(', ') : '';
  $('drive-faults').className = df.length ? 'bad' : '';
  const late = hil.shown_seq && hil.shown_seq !== s.seq ? hil.shown_seq - s.seq : 0;
  $('hil-note').textContent = `${sensorCells.length} sensors` + (late ? `; this state was shown to the controllers at tick ${hil.shown_seq} (${late} ticks after it was computed)` : '');
}

// the plotted channels of the chosen sensors: one series per value
function sensorSeries() {
  const out = [];
  for (const sn of (view.model && view.model.sensors) || []) {
    if (!plotSensors.has(sn.name)) continue;
    for (let k = 0; k < sn.dim; k++) out.push({ name: sn.dim > 1 ? `${sn.name}[${k}]` : sn.name, idx: sn.value_index + k });
  }
  return out;
}

// ------------------------------------------------------------------- plot
const colors = ['#ff6b6b', '#4dabf7', '#51cf66', '#fcc419', '#cc5de8', '#ff922b', '#22b8cf', '#f06595'];
// tells khz view which State.q / qd / tau indices to send for every state
// (the chosen joints, all three quantities so that switching shows the past)
function sendPlot() {
  if (!view.plotSeries) return;
  const sel = view.plotSeries.filter((j) => plotJoints.has(j.name));
  send({ op: 'plot', q: sel.map((j) => j.q), qd: sel.map((j) => j.v), tau: sel.map((j) => j.v),
    sensor: sensorSeries().map((c) => c.idx) });
  view.history = [];
}

// every state's sample (s.series: the states since the last message) or,
// without series, the state itself; 10 s kept
function record(s) {
  const h = view.history;
  const time = s.timeline_t ?? s.sim_time;
  if (h.length && time < h[h.length - 1].t) h.length = 0; // reset or a seek back
  const sr = s.series;
  if (sr) {
    // (sr.t: simulated time, or a recording's timeline time)
    for (let i = 0; i < sr.t.length; i++) {
      const p = { seq: sr.seq[i], t: sr.t[i], q: {}, qd: {}, tau: {}, sensor: {} };
      for (const k of ['q', 'qd', 'tau', 'sensor']) for (const idx in sr[k] || {}) p[k][idx] = sr[k][idx][i];
      if (h.length && p.t < h[h.length - 1].t) h.length = 0;
      h.push(p);
    }
  } else if (!h.length || s.seq !== h[h.length - 1].seq) { // (a message for new figures only: the same state)
    h.push({ seq: s.seq, t: time, q: s.q, qd: s.qd, tau: s.tau, sensor: s.hil ? s.hil.values : [] });
  }
  // drop what is older than 10 s (in one splice: at 1 kHz that is many)
  let k = 0;
  const tEnd = h.length ? h[h.length - 1].t : 0;
  while (k < h.length - 2 && tEnd - h[k].t > 10) k++;
  if (k) h.splice(0, k);
}

function drawPlot() {
  const cv = $('plot');
  const ctx = cv.getContext('2d');
  ctx.clearRect(0, 0, cv.width, cv.height);
  const h = view.history;
  const m = view.model;
  if (!m || h.length < 2) return;
  const qty = $('quantity').value;
  const series = qty === 'sensor' ? sensorSeries() : view.plotSeries.filter((j) => plotJoints.has(j.name)).map((j) => ({
    name: j.name, idx: qty === 'q' ? j.q : j.v,
  }));
  let lo = Infinity, hi = -Infinity;
  for (const sr of series) for (const p of h) { const v = p[qty][sr.idx]; if (v == null) continue; if (v < lo) lo = v; if (v > hi) hi = v; }
  if (!isFinite(lo)) return;
  if (hi - lo < 1e-9) { lo -= 0.5; hi += 0.5; }
  const t0 = h[0].t, t1 = h[h.length - 1].t;
  const X = (t) => 34 + (cv.width - 40) * (t - t0) / Math.max(1e-9, t1 - t0);
  const Y = (v) => cv.height - 14 - (cv.height - 24) * (v - lo) / (hi - lo);
  ctx.strokeStyle = '#444'; ctx.fillStyle = '#889'; ctx.font = '10px sans-serif';
  ctx.beginPath(); ctx.moveTo(34, 4); ctx.lineTo(34, cv.height - 14); ctx.lineTo(cv.width, cv.height - 14); ctx.stroke();
  ctx.fillText(hi.toPrecision(3), 0, 12); ctx.fillText(lo.toPrecision(3), 0, cv.height - 16);
  ctx.fillText(`${t0.toFixed(2)} s`, 34, cv.height - 2); ctx.fillText(`${t1.toFixed(2)} s`, cv.width - 44, cv.height - 2);
  series.forEach((sr, k) => {
    ctx.strokeStyle = colors[k % colors.length];
    ctx.beginPath();
    // every sample; several per pixel column are one vertical stroke (min..max)
    let col = null, cmin = 0, cmax = 0, first = true;
    const flush = () => {
      if (col == null) return;
      const y0 = Y(cmin), y1 = Y(cmax);
      if (first) { ctx.moveTo(col, y0); first = false; } else ctx.lineTo(col, y0);
      if (y1 !== y0) ctx.lineTo(col, y1);
    };
    for (const p of h) {
      const v = p[qty][sr.idx];
      if (v == null) continue;
      const x = Math.round(X(p.t));
      if (x !== col) { flush(); col = x; cmin = cmax = v; } else { if (v < cmin) cmin = v; if (v > cmax) cmax = v; }
    }
    flush();
    ctx.stroke();
    ctx.fillStyle = colors[k % colors.length];
    ctx.fillText(sr.name, 40 + 70 * (k % 4), 12 + 11 * Math.floor(k / 4));
  });
}

// -------------------------------------------------------- socket, requests
function send(req) {
  if (view.ws && view.ws.readyState === WebSocket.OPEN) view.ws.send(JSON.stringify(req));
}

function connect() {
  const ws = new WebSocket(`ws://${location.host}/ws`);
  view.ws = ws;
  ws.onopen = () => { $('banner').textContent = 'connected'; };
  ws.onclose = () => {
    $('banner').textContent = 'disconnected from khz view: retrying…';
    setTimeout(connect, 1000);
  };
  ws.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    if (msg.t === 'model') {
      view.model = msg;
      view.source = msg.source;
      view.history = [];
      buildScene(msg);
      showModel(msg);
      sendPlot();
      const nb = msg.bodies.length - 1;
      view.bannerText = `${msg.scene} · ${nb} ${nb === 1 ? 'body' : 'bodies'}`;
      $('banner').textContent = view.bannerText;
    } else if (msg.t === 'state') {
      // taken: khz view sends the next state only when this page keeps up
      send({ op: 'ack' });
      if (view.hold) return; // a test holds the scene as it is (its own changes drawn)
      view.state = msg;
      view.seq = msg.seq;
      view.frames++;
      applyPose(msg.pose);
      if (!view.framed) { frameCamera(); view.framed = true; }
      showContacts(msg.contacts);
      showState(msg);
      showSensors(msg);
      record(msg);
      if (msg.error) { $('log').textContent = msg.error; $('log').className = 'bad'; }
      needRender = true;
    } else if (msg.t === 'reply') {
      view.replies.push(msg);
      $('log').textContent = (msg.ok ? '' : 'refused: ') + msg.text;
      $('log').className = msg.ok ? '' : 'bad';
    } else if (msg.t === 'timeline') {
      view.timeline = msg;
      $('scrub').max = msg.n - 1;
      $('play').disabled = msg.playing;
      $('stop').disabled = !msg.playing;
    }
  };
}

$('pause').onclick = () => send({ op: 'pause' });
$('resume').onclick = () => send({ op: 'resume' });
$('step').onclick = () => send({ op: 'step', n: Math.max(1, parseInt($('stepn').value, 10) || 1) });
$('reset').onclick = () => send({ op: 'reset' });
$('show-collision').onchange = () => { for (const o of view.collision) o.visible = $('show-collision').checked; needRender = true; };
$('quantity').onchange = () => { needRender = true; };
$('method').onchange = () => send({ op: 'method', name: $('method').value });
$('show-contacts').onchange = () => send({ op: 'contacts', on: $('show-contacts').checked });
$('play').onclick = () => send({ op: 'play' });
$('stop').onclick = () => send({ op: 'stop' });
$('back').onclick = () => send({ op: 'frame', delta: -1 });
$('fwd').onclick = () => send({ op: 'frame', delta: 1 });
$('scrub').oninput = () => send({ op: 'seek', index: parseInt($('scrub').value, 10) });
$('speed').onchange = () => send({ op: 'speed', x: parseFloat($('speed').value) });

// --------------------------------------------------- hover, drag-to-push
const ray = new THREE.Raycaster();
const ndc = new THREE.Vector2();
function pick(ev) {
  const r = renderer.domElement.getBoundingClientRect();
  ndc.set(((ev.clientX - r.left) / r.width) * 2 - 1, -((ev.clientY - r.top) / r.height) * 2 + 1);
  ray.setFromCamera(ndc, camera);
  const hits = ray.intersectObjects([contactGroup, bodyRoot], true)
    .filter((h) => visibleInScene(h.object) && (h.object.userData.contact != null || (h.object.userData.body != null && !h.object.userData.plane)));
  return hits[0] || null;
}

function visibleInScene(o) {
  for (; o; o = o.parent) if (!o.visible) return false;
  return true;
}

const drag = { body: -1, local: null, plane: new THREE.Plane(), target: new THREE.Vector3(), timer: 0 };
const dragLine = new THREE.Line(new THREE.BufferGeometry().setFromPoints([new THREE.Vector3(), new THREE.Vector3()]),
  new THREE.LineBasicMaterial({ color: 0xffffff, depthTest: false }));
dragLine.visible = false;
dragLine.renderOrder = 11;
scene.add(dragLine);

// where the grabbed point is at the body's newest pose
function grabPoint() {
  view.bodies[drag.body].updateMatrixWorld();
  return drag.local.clone().applyMatrix4(view.bodies[drag.body].matrixWorld);
}

function pushNow() {
  if (drag.body < 0 || !view.state) return;
  // a critically damped spring per kg from the grabbed point to the pointer,
  // F = m (k d - c v), k = 40 / s^2, c = 2 sqrt(k), capped at 3 g; applied at the
  // centre of mass (no torque: the server bounds torques by inertias it does not publish)
  const m = view.model.masses[drag.body] || 1;
  const d = drag.target.clone().sub(grabPoint());
  const tw = view.state.twist, o = 6 * drag.body;
  const v = tw && tw.length >= o + 6 ? new THREE.Vector3(tw[o + 3], tw[o + 4], tw[o + 5]) : new THREE.Vector3();
  const f = d.multiplyScalar(40).sub(v.multiplyScalar(2 * Math.sqrt(40))).multiplyScalar(m);
  const cap = 3 * 9.81 * m;
  if (f.length() > cap) f.setLength(cap);
  send({ op: 'push', body: drag.body, force: f.toArray(), torque: [0, 0, 0], duration: 0.06 });
  needRender = true;
}

renderer.domElement.addEventListener('pointerdown', (ev) => {
  if (ev.button !== 0 || view.source !== 'live') return;
  const h = pick(ev);
  if (!h || h.object.userData.body == null || h.object.userData.body === 0) return;
  drag.body = h.object.userData.body;
  // the grabbed point in the body's frame as drawn (the ray hit the drawn mesh;
  // a newer pose may have arrived since the last frame)
  drag.local = view.bodies[drag.body].worldToLocal(h.point.clone());
  drag.plane.setFromNormalAndCoplanarPoint(camera.getWorldDirection(new THREE.Vector3()), h.point);
  drag.target.copy(h.point);
  orbit.enabled = false;
  dragLine.visible = true;
  drag.timer = setInterval(pushNow, 50);
  renderer.domElement.setPointerCapture(ev.pointerId);
});
renderer.domElement.addEventListener('pointermove', (ev) => {
  if (drag.body >= 0) {
    const r = renderer.domElement.getBoundingClientRect();
    ndc.set(((ev.clientX - r.left) / r.width) * 2 - 1, -((ev.clientY - r.top) / r.height) * 2 + 1);
    ray.setFromCamera(ndc, camera);
    ray.ray.intersectPlane(drag.plane, drag.target);
    return;
  }
  const h = pick(ev);
  const tip = $('hover');
  if (!h) { tip.style.display = 'none'; return; }
  let text;
  if (h.object.userData.contact != null && view.state) {
    const c = view.state.contacts, o = 12 * h.object.userData.contact;
    const f = Math.hypot(c[o + 7], c[o + 8], c[o + 9]);
    text = `contact ${view.model.bodies[c[o + 10]]} – ${view.model.bodies[c[o + 11]]}\n` +
      `depth ${(c[o + 6] * 1000).toFixed(3)} mm, |F| ${f.toFixed(2)} N`;
  } else {
    const b = h.object.userData.body;
    const j = view.model.joints.find((jj) => jj.body === b);
    text = `${view.model.bodies[b]} (body ${b}, ${view.model.masses[b].toFixed(3)} kg)` + (j ? `\njoint ${j.name} (${j.type})` : '');
  }
  const r = host.getBoundingClientRect();
  tip.textContent = text;
  tip.style.left = `${ev.clientX - r.left + 12}px`;
  tip.style.top = `${ev.clientY - r.top + 12}px`;
  tip.style.display = 'block';
});
function endDrag() {
  if (drag.body < 0) return;
  clearInterval(drag.timer);
  drag.body = -1;
  orbit.enabled = true;
  dragLine.visible = false;
}
renderer.domElement.addEventListener('pointerup', endDrag);
renderer.domElement.addEventListener('pointercancel', endDrag);

// test hooks: where a body's origin lands on the page, and which body a point
// hits, both in the last frame drawn. Picking (as a click does) tests the meshes
// as drawn: their world matrices are updated when a frame is rendered, not when
// a state arrives; under load (software WebGL, a frame every second or two) many
// states come between two frames, so the origin must come from the drawn matrix
// too (getWorldPosition would update the body to the newest pose, and its ray
// would meet the links of a moving arm where they were a frame ago: nothing)
view.project = (i) => {
  const v = new THREE.Vector3().setFromMatrixPosition(view.bodies[i].matrixWorld).project(camera);
  const r = renderer.domElement.getBoundingClientRect();
  return { x: r.left + (v.x + 1) / 2 * r.width, y: r.top + (1 - v.y) / 2 * r.height, inside: Math.abs(v.x) < 1 && Math.abs(v.y) < 1 && v.z < 1 };
};
// a world point (a contact's position) on the page
view.projectWorld = (x, y, z) => {
  const v = new THREE.Vector3(x, y, z).project(camera);
  const r = renderer.domElement.getBoundingClientRect();
  return { x: r.left + (v.x + 1) / 2 * r.width, y: r.top + (1 - v.y) / 2 * r.height, inside: Math.abs(v.x) < 1 && Math.abs(v.y) < 1 && v.z < 1 };
};
// the contact point (its index in the state) a point of the page hits, or -1
view.pickContactAt = (x, y) => {
  const h = pick({ clientX: x, clientY: y });
  return h && h.object.userData.contact != null ? h.object.userData.contact : -1;
};
view.redraw = () => { needRender = true; };
view.pickAt = (x, y) => {
  const h = pick({ clientX: x, clientY: y });
  return h ? (h.object.userData.body ?? -1) : -1;
};

// ------------------------------------------------------------------ frame
// renders only when something changed (a state, the camera, a drag): software
// WebGL and laptops on battery thank it
function animate() {
  requestAnimationFrame(animate);
  if (!needRender) return;
  needRender = false;
  if (drag.body >= 0) {
    dragLine.geometry.setFromPoints([grabPoint(), drag.target]);
  }
  drawPlot();
  renderer.render(scene, camera);
  view.rendered++;
}
orbit.addEventListener('change', () => { needRender = true; });
connect();
animate();
