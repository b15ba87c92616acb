// browser.mjs — drives Debian's chromium (headless, software WebGL) with the
// npm registry's playwright-core against a running `khz view`, and prints
// what it saw as JSON for tests/viewer/test_view.py to judge.
//
//   node browser.mjs VIEWER_DIR URL check OUT.png BODY [PREFIX EXPECTED.png SEQ [BODY...]]
//                                                          the test's walk-through
//   node browser.mjs VIEWER_DIR URL shot OUT.png [SECONDS] [contacts]   a screenshot
//   node browser.mjs VIEWER_DIR URL compare PREFIX EXPECTED.png SEQ [BODY...]
//   node browser.mjs VIEWER_DIR URL hil    the HIL sensor panel and a sensor's plot
//   node browser.mjs VIEWER_DIR URL shapes   every geom's object, each body drawn and picked
//   node browser.mjs VIEWER_DIR URL play BODY FIRST END   a recording's timeline (the
//        page's scrub, frame, speed and play), BODY's pose not finite in states FIRST..END-1
// (the page is 1024 x 640 unless $KHZ_SHOT_SIZE says WxH)
//
// compare: waits for state SEQ (a paused server: the pose is fixed), takes
// the scene canvas (PREFIX-actual.png) and compares it with EXPECTED.png in
// the page: a pixel differs when a channel differs by more than 48 of 255; per
// 16 x 16 tile the fraction of differing pixels; PREFIX-diff.png shows them
// (red on the dimmed actual image). Then, as the comparison's own control,
// each BODY is hidden, and then moved 0.1 m along x, and compared again (the
// same figures for each; the test requires that they fail).
//
// check: waits for states; the screenshot of the scene and, per body, the
// pixel at its projected origin; seq before/after pressing pause (and the page
// saying so); resume; drags BODY 160 px to the right for 1.5 s and reports
// its pose before and after (the test reads the server too).
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [viewerDir, url, mode, out, arg, arg2] = process.argv.slice(2);
const require = createRequire(join(resolve(viewerDir), 'package.json'));
const pw = await import(pathToFileURL(require.resolve('playwright-core')).href);
const chromium = pw.chromium ?? pw.default.chromium;
const browser = await chromium.launch({
  executablePath: process.env.KHZ_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist'],
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const result = { times: {} };
let errors = [];
const t0 = Date.now();
const mark = (k) => { result.times[k] = (Date.now() - t0) / 1000; };
try {
  const [w, h] = (process.env.KHZ_SHOT_SIZE || '1024x640').split('x').map(Number);
  const page = await browser.newPage({ viewport: { width: w, height: h } });
  errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  mark('launched');
  await page.goto(url, { timeout: 120000 });
  await page.waitForFunction(() => window.khz && window.khz.frames >= 1, null, { timeout: 180000 });
  mark('states');
  result.model = await page.evaluate(() => ({ scene: khz.model.scene, bodies: khz.model.bodies, geoms: khz.model.geoms.length, joints: khz.model.joints }));
  const seqNow = () => page.evaluate(() => khz.seq);
  const pausedNow = () => page.evaluate(() => khz.state.paused);

  // the scene canvas against an expected image (see the head of this file)
  const compareRun = async (prefix, expected, seq, bodies) => {
    const { readFileSync, writeFileSync, existsSync } = await import('node:fs');
    await page.waitForFunction((n) => khz.seq >= n, Number(seq), { timeout: 30000 });
    const settle = async () => {
      const r0 = await page.evaluate(() => { const r = khz.rendered; khz.redraw(); return r; });
      await page.waitForFunction((r) => khz.rendered > r, r0, { timeout: 60000 });
    };
    await settle();
    result.seq = await page.evaluate(() => khz.seq);
    const png = await page.evaluate(() => document.querySelector('#scene canvas').toDataURL('image/png'));
    writeFileSync(`${prefix}-actual.png`, Buffer.from(png.split(',')[1], 'base64'));
    if (!existsSync(expected)) {
      result.missing = expected;
    } else {
      const exp = 'data:image/png;base64,' + readFileSync(expected).toString('base64');
      const compare = (withDiff) => page.evaluate(async ([src, withDiff]) => {
        const img = new Image();
        img.src = src;
        await img.decode();
        const c = document.querySelector('#scene canvas');
        const w = c.width, h = c.height;
        if (img.width !== w || img.height !== h) return { size: [w, h], expectedSize: [img.width, img.height] };
        const grab = (source) => {
          const t = document.createElement('canvas');
          t.width = w; t.height = h;
          const ctx = t.getContext('2d');
          ctx.drawImage(source, 0, 0, w, h);
          return [t, ctx, ctx.getImageData(0, 0, w, h)];
        };
        const [, , a] = grab(c);
        const [, , e] = grab(img);
        const T = 16, tw = Math.ceil(w / T), th = Math.ceil(h / T);
        const tiles = new Float64Array(tw * th);
        const [dc, dctx, d] = grab(c);
        let n = 0, maxd = 0;
        for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) {
          const o = 4 * (y * w + x);
          const dd = Math.max(Math.abs(a.data[o] - e.data[o]), Math.abs(a.data[o + 1] - e.data[o + 1]), Math.abs(a.data[o + 2] - e.data[o + 2]));
          if (dd > maxd) maxd = dd;
          const bad = dd > 48;
          if (bad) { n++; tiles[Math.floor(y / T) * tw + Math.floor(x / T)]++; }
          if (bad) { d.data[o] = 255; d.data[o + 1] = 0; d.data[o + 2] = 0; } else { for (let k = 0; k < 3; k++) d.data[o + k] = a.data[o + k] >> 2; }
          d.data[o + 3] = 255;
        }
        let worst = 0, badTiles = 0;
        for (let i = 0; i < tiles.length; i++) {
          const tx = i % tw, ty = Math.floor(i / tw);
          const area = Math.min(T, w - tx * T) * Math.min(T, h - ty * T);
          const f = tiles[i] / area;
          if (f > worst) worst = f;
          if (f > 0.25) badTiles++;
        }
        dctx.putImageData(d, 0, 0);
        return { size: [w, h], differing: n / (w * h), worst_tile: worst, bad_tiles: badTiles, max_diff: maxd,
          diff: withDiff ? dc.toDataURL('image/png') : null };
      }, [exp, withDiff]);
      const r = await compare(true);
      if (r.diff) writeFileSync(`${prefix}-diff.png`, Buffer.from(r.diff.split(',')[1], 'base64'));
      delete r.diff;
      result.compare = r;
      // the comparison's own control: a body hidden, a body moved, must fail
      result.controls = [];
      await page.evaluate(() => { khz.hold = true; });
      for (const name of bodies) {
        const i = await page.evaluate((n) => khz.model.bodies.indexOf(n), name);
        if (i < 1) throw new Error(`no body '${name}' to hide`);
        await page.evaluate((k) => { khz.bodies[k].visible = false; }, i);
        await settle();
        const hid = await compare(false);
        await page.evaluate((k) => { khz.bodies[k].visible = true; khz.bodies[k].position.x += 0.1; }, i);
        await settle();
        const moved = await compare(false);
        await page.evaluate((k) => { khz.bodies[k].position.x -= 0.1; }, i);
        delete hid.diff; delete moved.diff;
        result.controls.push({ body: name, hidden: hid, moved });
      }
      await settle();
      const again = await compare(false);
      delete again.diff;
      result.restored = again;
      await page.evaluate(() => { khz.hold = false; });
    }
  };
  if (mode === 'hil') {
    // the sensor panel and a sensor's plot (a server running scenes/hil_arm.yaml)
    await page.waitForFunction(() => khz.model.sensors && khz.model.sensors.length && khz.frames >= 3,
      null, { timeout: 60000 });
    await page.selectOption('#quantity', 'sensor');
    await sleep(1500);
    result.rows = await page.evaluate(() => Array.from(document.querySelectorAll('#sensors tr')).map(
      (tr) => ({ cells: Array.from(tr.cells).map((td) => td.textContent), cls: tr.className,
        plot: tr.querySelector('input') ? tr.querySelector('input').checked : null })));
    result.drive_faults = await page.textContent('#drive-faults');
    result.warnings = await page.evaluate(() => ({ text: document.getElementById('warnings').textContent,
      cls: document.getElementById('warnings').className, state: khz.state.warnings,
      flags: document.getElementById('flags').textContent }));
    result.note = await page.textContent('#hil-note');
    result.panel_shown = await page.evaluate(() => getComputedStyle(document.getElementById('hil')).display !== 'none');
    // the plot's history: every state's encoder reading beside the joint's exact q
    result.history = await page.evaluate(() => {
      const h = khz.history;
      const enc = khz.model.sensors.find((sn) => sn.name === 'enc1');
      const j = khz.model.joints.find((jj) => jj.name === 'arm/joint1');
      let both = 0, worst = 0;
      for (const p of h) {
        const r = p.sensor[enc.value_index], q = p.q[j.q_index];
        if (r == null || q == null) continue;
        both++;
        worst = Math.max(worst, Math.abs(r - q));
      }
      return { n: h.length, seq0: h[0].seq, seq1: h[h.length - 1].seq, both, worst_enc1_minus_q: worst };
    });
    // the plot draws sensor series: pixels of the first colour in the plot canvas
    result.plot_pixels = await page.evaluate(() => {
      const c = document.getElementById('plot');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let o = 0; o < d.length; o += 4) if (d[o] === 0xff && d[o + 1] === 0x6b && d[o + 2] === 0x6b) n++;
      return n;
    });
    // plot the dropped-out sensor too: its values are gaps (null), not numbers
    await page.evaluate(() => {
      const i = khz.model.sensors.findIndex((sn) => sn.name === 'enc2');
      document.querySelectorAll('#sensors tr')[i + 1].querySelector('input').click();
    });
    // (the states already sent with the old choice come first: a loaded page is behind)
    await page.waitForFunction(() => {
      const enc = khz.model.sensors.find((sn) => sn.name === 'enc2');
      const h = khz.history;
      return h.length > 100 && h.slice(-50).every((p) => p.sensor && String(enc.value_index) in p.sensor);
    }, null, { timeout: 60000 });
    result.enc2 = await page.evaluate(() => {
      const enc = khz.model.sensors.find((sn) => sn.name === 'enc2');
      const v = khz.history.filter((p) => String(enc.value_index) in p.sensor).map((p) => p.sensor[enc.value_index]);
      return { n: v.length, nulls: v.filter((x) => x === null).length, numbers: v.filter((x) => typeof x === 'number').length };
    });
  } else if (mode === 'shapes') {
    // every geom's three.js object (its geometry's type, vertex count and
    // bounding box in the body frame) and, per body, the pixel at its origin
    // and what a click there picks; the ground's pixel at a world point
    const r0 = await page.evaluate(() => { const r = khz.rendered; khz.redraw(); return r; });
    await page.waitForFunction((k) => khz.rendered > k, r0, { timeout: 60000 });
    result.geoms = await page.evaluate(() => khz.geomObjects.map((o, i) => {
      if (!o) return null;
      const m = o.isMesh ? o : null;
      let bb = null;
      if (m) { m.geometry.computeBoundingBox(); bb = [m.geometry.boundingBox.min.toArray(), m.geometry.boundingBox.max.toArray()]; }
      return { body: khz.model.geoms[i].body, type: khz.model.geoms[i].type, object: o.type,
        geometry: m ? m.geometry.type : null, vertices: m ? m.geometry.attributes.position.count : 0,
        indices: m && m.geometry.index ? m.geometry.index.count : 0, bbox: bb, visible: o.visible,
        children: o.children.map((c) => c.type) };
    }));
    const pixelAt = (p) => page.evaluate((q) => {
      const c = document.querySelector('#scene canvas');
      const r = c.getBoundingClientRect();
      const t = document.createElement('canvas');
      t.width = r.width; t.height = r.height;
      const ctx = t.getContext('2d');
      ctx.drawImage(c, 0, 0, r.width, r.height);
      return Array.from(ctx.getImageData(Math.round(q.x - r.left), Math.round(q.y - r.top), 1, 1).data);
    }, p);
    result.bodies = [];
    const nb = await page.evaluate(() => khz.bodies.length);
    for (let i = 1; i < nb; i++) {
      const p = await page.evaluate((k) => khz.project(k), i);
      result.bodies.push({ body: i, inside: p.inside, rgba: p.inside ? await pixelAt(p) : null,
        hit: p.inside ? await page.evaluate(([x, y]) => khz.pickAt(x, y), [p.x, p.y]) : -1 });
    }
    const g = await page.evaluate(() => {
      // a ground point in view beside the objects: the camera's target moved down to z = 0 and out
      const t = khz.projectWorld(0, -0.45, 0);
      return t;
    });
    result.ground = { inside: g.inside, rgba: g.inside ? await pixelAt(g) : null };
    result.background = await page.evaluate(() => khz.backgroundRGB);
  } else if (mode === 'play') {
    // a recording's timeline through the page's own controls (`khz view --play`),
    // and the bodies whose pose is not finite in states arg..arg2-1 (BODY = out)
    const [bad0, bad1] = [Number(arg), Number(arg2)];
    const badBody = out;
    await page.waitForFunction(() => khz.timeline && khz.state && khz.state.index != null, null, { timeout: 60000 });
    result.n = await page.evaluate(() => khz.timeline.n);
    await page.click('#stop');
    await page.waitForFunction(() => !khz.timeline.playing, null, { timeout: 60000 });
    // scrub: the slider moved to an index (its input event, as a drag gives)
    const scrub = async (i) => {
      await page.$eval('#scrub', (e, v) => { e.value = String(v); e.dispatchEvent(new Event('input')); }, i);
      await page.waitForFunction((k) => khz.state.index === k, i, { timeout: 60000 });
      // a frame drawn with that state (no page error on the way)
      const r = await page.evaluate(() => { const r0 = khz.rendered; khz.redraw(); return r0; });
      await page.waitForFunction((k) => khz.rendered > k, r, { timeout: 60000 });
    };
    const look = () => page.evaluate((name) => {
      const b = khz.model.bodies.indexOf(name);
      return { index: khz.state.index, seq: khz.state.seq, pos: document.getElementById('tl-pos').textContent,
        visible: khz.bodies[b].visible, invalid: khz.invalid.map((i) => khz.model.bodies[i]),
        banner: document.getElementById('banner').textContent, banner_cls: document.getElementById('banner').className,
        warnings: document.getElementById('warnings').textContent, simtime: document.getElementById('simtime').textContent };
    }, badBody);
    const good = Math.max(0, bad0 - 30);
    await scrub(good);
    result.scrubbed = await look();
    await page.click('#fwd');
    await page.waitForFunction((k) => khz.state.index === k + 1, good, { timeout: 60000 });
    result.forward = await look();
    await page.click('#back');
    await page.waitForFunction((k) => khz.state.index === k, good, { timeout: 60000 });
    result.back = await look();
    await page.selectOption('#speed', '2');
    await page.waitForFunction(() => khz.timeline.speed === 2, null, { timeout: 60000 });
    result.speed = await page.evaluate(() => khz.timeline.speed);
    // a state whose pose of badBody is NaN: not drawn, said in the status line
    await scrub(Math.floor((bad0 + bad1) / 2));
    result.bad = await look();
    await scrub(bad1 + 10);
    result.after = await look();
    // play: the index runs on from where it is (at 2x)
    const from = await page.evaluate(() => khz.state.index);
    await page.click('#play');
    await page.waitForFunction((k) => khz.state.index > k + 20, from, { timeout: 60000 });
    result.played = await look();
    result.played_from = from;
  } else if (mode === 'controls') {
    // the panel, names, hovering, plots, contacts, step, contact method and
    // reset against a running server (BODY = out: the body hovered)
    await page.waitForFunction(() => khz.frames > 5 && khz.state.server && khz.state.server.lateness, null, { timeout: 120000 });
    const b = result.model.bodies.indexOf(out || 'box1');
    // the server's figures as the panel shows them
    result.panel = await page.evaluate(() => Object.fromEntries(['mode', 'rate', 'lateness', 'compute', 'overruns',
      'clients', 'ncontacts', 'warnings', 'flags'].map((k) => [k, document.getElementById(k).textContent])));
    // (paused early: a running server makes the page draw every state it takes,
    // a second or two each under load; paused, it draws when asked)
    // contacts on (the page's toggle sets the server's publish_contacts), then
    // paused, stepped 3 ticks: the page's newest state is 3 after the pause's
    await page.click('#show-contacts');
    await page.waitForFunction(() => khz.replies.some((r) => r.op === 'contacts' && r.ok) && khz.state.contacts.length > 0,
      null, { timeout: 60000 });
    const pauses = await page.evaluate(() => khz.replies.filter((r) => r.op === 'pause').length);
    await page.click('#pause');
    await page.waitForFunction((k) => khz.replies.filter((r) => r.op === 'pause').length > k, pauses, { timeout: 60000 });
    const pausedAt = await page.evaluate(() => Number(khz.replies.filter((r) => r.op === 'pause').pop().text.match(/state (\d+)/)[1]));
    await page.waitForFunction((s) => khz.seq >= s, pausedAt, { timeout: 60000 });
    // bodies and joints: the names panel and hovering a body
    result.names = await page.textContent('#names');
    const bp = await page.evaluate((i) => khz.project(i), b);
    result.hover_at = { ...bp, pick: await page.evaluate(([x, y]) => khz.pickAt(x, y), [bp.x, bp.y]) };
    await page.mouse.move(bp.x - 30, bp.y - 30);
    await page.mouse.move(bp.x, bp.y, { steps: 3 });
    await page.waitForFunction(() => document.getElementById('hover').style.display === 'block', null, { timeout: 60000 })
      .catch(() => {});
    result.hover_body = await page.evaluate(() => { const t = document.getElementById('hover'); return t.style.display === 'block' ? t.textContent : null; });
    // the time plots: position, velocity and torque of the chosen joints drawn
    const plotPixels = () => page.evaluate(() => {
      const c = document.getElementById('plot');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let o = 0; o < d.length; o += 4) if (d[o] === 0xff && d[o + 1] === 0x6b && d[o + 2] === 0x6b) n++;
      return n;
    });
    result.plot_pixels = {};
    for (const q of ['qd', 'tau', 'q']) {
      await page.selectOption('#quantity', q);
      const r = await page.evaluate(() => { const r0 = khz.rendered; khz.redraw(); return r0; });
      await page.waitForFunction((k) => khz.rendered > k, r, { timeout: 60000 });
      result.plot_pixels[q] = await plotPixels();
    }
    result.plot_values = await page.evaluate(() => {
      const j = khz.plotSeries[0];
      const h = khz.history;
      return { n: h.length, q: h.filter((p) => p.q[j.q] != null).length, qd: h.filter((p) => p.qd[j.v] != null).length,
        tau: h.filter((p) => p.tau[j.v] != null).length };
    });

    await page.fill('#stepn', '3');
    await page.click('#step');
    await page.waitForFunction(() => khz.replies.some((r) => r.op === 'step'), null, { timeout: 60000 });
    await page.waitForFunction((s) => khz.seq >= s + 3, pausedAt, { timeout: 60000 });
    await sleep(500);
    result.step = { paused_at: pausedAt, seq: await seqNow(), reply: await page.evaluate(() => khz.replies.find((r) => r.op === 'step')) };
    // hovering a contact point: its bodies, penetration depth and force
    const r2 = await page.evaluate(() => { const r0 = khz.rendered; khz.redraw(); return r0; });
    await page.waitForFunction((k) => khz.rendered > k, r2, { timeout: 60000 });
    const target = await page.evaluate(() => {
      const c = khz.state.contacts;
      // the deepest contact that a pointer can reach (not behind a body)
      const order = Array.from({ length: c.length / 12 }, (_, i) => i).sort((a, b) => c[12 * b + 6] - c[12 * a + 6]);
      for (const i of order) {
        const p = khz.projectWorld(c[12 * i], c[12 * i + 1], c[12 * i + 2]);
        if (p.inside && khz.pickContactAt(p.x, p.y) === i) return { i, x: p.x, y: p.y };
      }
      return null;
    });
    result.contact_target = target;
    if (target) {
      await page.mouse.move(target.x + 40, target.y + 40);
      await page.mouse.move(target.x, target.y);
      await page.waitForFunction(() => document.getElementById('hover').textContent.startsWith('contact'), null, { timeout: 60000 });
      result.hover_contact = await page.textContent('#hover');
      result.contact = await page.evaluate((i) => ({ seq: khz.seq, c: khz.state.contacts.slice(12 * i, 12 * i + 12) }), target.i);
    }
    // drawn: a point and a normal per contact, a force arrow per contact whose
    // force draws longer than 0.1 mm, each arrow along its force (on body1, or
    // on body2 when body1 is the world)
    result.contacts_drawn = await page.evaluate(() => {
      const c = khz.state.contacts, n = c.length / 12, pool = khz.contactPool;
      let arrowsWanted = 0, arrowsAlong = 0;
      for (let i = 0; i < n; i++) {
        const o = 12 * i, sgn = c[o + 10] === 0 ? -1 : 1;
        const f = [c[o + 7], c[o + 8], c[o + 9]].map((x) => sgn * x), fn = Math.hypot(...f);
        if (fn * khz.forceScale <= 1e-4) continue;
        arrowsWanted++;
        const a = pool[i].arrow;
        const e = a.matrixWorld.elements; // (an ArrowHelper points along its +y)
        const y = [e[4], e[5], e[6]], yn = Math.hypot(...y);
        const cos = (y[0] * f[0] + y[1] * f[1] + y[2] * f[2]) / (yn * fn);
        if (a.visible && cos > 0.999) arrowsAlong++;
      }
      return { n, groups: pool.filter((p) => p.grp.visible).length,
        dots: pool.filter((p) => p.grp.visible && p.dot.visible).length,
        normals: pool.filter((p) => p.grp.visible && p.nl.visible).length,
        arrows: pool.filter((p) => p.grp.visible && p.arrow.visible).length, arrowsWanted, arrowsAlong,
        text: document.getElementById('ncontacts').textContent };
    });
    // the contact method: another of the server's list, taken by the next tick
    const methods = await page.evaluate(() => khz.model.contact_methods);
    const was = await page.evaluate(() => khz.state.contact_method);
    const other = methods.find((m) => m !== was);
    result.method = { methods, was, other };
    if (other) {
      await page.selectOption('#method', other);
      await page.waitForFunction(() => khz.replies.some((r) => r.op === 'method'), null, { timeout: 60000 });
      const s1 = await seqNow();
      await page.click('#step');
      await page.waitForFunction((s) => khz.seq > s, s1, { timeout: 60000 });
      result.method.reply = await page.evaluate(() => khz.replies.find((r) => r.op === 'method'));
      result.method.state = await page.evaluate(() => khz.state.contact_method);
      result.method.text = await page.textContent('#ncontacts');
      await page.selectOption('#method', was);
      await page.waitForFunction(() => khz.replies.filter((r) => r.op === 'method').length === 2, null, { timeout: 60000 });
    }
    // reset: simulated time starts again
    result.before_reset = await page.evaluate(() => khz.state.sim_time);
    await page.click('#reset');
    await page.waitForFunction(() => khz.replies.some((r) => r.op === 'reset'), null, { timeout: 60000 });
    await page.waitForFunction(() => khz.state.sim_time < 0.01, null, { timeout: 60000 });
    result.reset = await page.evaluate(() => ({ reply: khz.replies.find((r) => r.op === 'reset'), sim_time: khz.state.sim_time,
      simtime_text: document.getElementById('simtime').textContent }));
  } else if (mode === 'compare') {
    await compareRun(...process.argv.slice(5, 8), process.argv.slice(8));
  } else if (mode === 'shot') {
    if (arg2 === 'contacts') await page.click('#show-contacts', { timeout: 120000 });
    await sleep(1000 * parseFloat(arg || '2'));
    await page.screenshot({ path: out });
  } else {
    // with PREFIX EXPECTED SEQ [BODY...] after BODY: the paused server's scene
    // against the expected image first, then resume
    if (process.argv.length > 9) {
      await compareRun(...process.argv.slice(7, 10), process.argv.slice(10));
      await page.click('#resume');
      mark('compared');
    }
    await page.waitForFunction(() => khz.frames > 5, null, { timeout: 60000 });
    // what is drawn: a screenshot of the page and, per body, the pixel under its
    // origin and what a click there picks, all of the last frame drawn (a frame
    // drawn since the resume: under load software WebGL draws one every second or two)
    await sleep(500);
    const drawn = await page.evaluate(() => khz.rendered);
    await page.waitForFunction((r) => khz.rendered > r, drawn, { timeout: 60000 });
    const { writeFileSync } = await import('node:fs');
    const png = await page.evaluate(() => document.querySelector('#scene canvas').toDataURL('image/png'));
    writeFileSync(out, Buffer.from(png.split(',')[1], 'base64'));
    result.pixels = await page.evaluate(() => {
      const c = document.querySelector('#scene canvas');
      const r = c.getBoundingClientRect();
      const tmp = document.createElement('canvas');
      tmp.width = r.width; tmp.height = r.height;
      const ctx = tmp.getContext('2d');
      ctx.drawImage(c, 0, 0, r.width, r.height);
      return khz.bodies.map((_, i) => {
        const p = khz.project(i);
        const x = Math.round(p.x - r.left), y = Math.round(p.y - r.top);
        const d = p.inside ? Array.from(ctx.getImageData(x, y, 1, 1).data) : null;
        return { body: i, inside: p.inside, x, y, rgba: d, hit: p.inside ? khz.pickAt(p.x, p.y) : -1 };
      });
    });
    result.background = await page.evaluate(() => khz.backgroundRGB);

    mark('pixels');
    // the plot's history: every state of the plotted joints, not one per frame
    await sleep(1500);
    result.history = await page.evaluate(() => {
      const h = khz.history;
      const seqs = h.map((p) => p.seq);
      let dup = 0;
      for (let i = 1; i < seqs.length; i++) if (seqs[i] <= seqs[i - 1]) dup++;
      const j = khz.plotSeries[0];
      // (the server's own count of states it could not publish, since it started:
      // a loaded machine's, not the viewer's)
      return { n: h.length, seq0: seqs[0], seq1: seqs[seqs.length - 1], out_of_order: dup,
        frames: khz.frames, with_value: h.filter((p) => p.q[j.q] != null).length,
        server_dropped: khz.state.stats.states_dropped };
    });
    // pause: the sequence number stops and the state says PAUSED
    // (running: a newer state comes; under load the page takes one a second or two)
    const s0 = await seqNow();
    await page.waitForFunction((s) => khz.seq > s, s0, { timeout: 60000 }).catch(() => {});
    result.seq_running = [s0, await seqNow()];
    await page.click('#pause');
    await page.waitForFunction(() => khz.state.paused, null, { timeout: 60000 });
    // the loop's paused flag comes from GetStats, which can answer before the
    // states published just ahead of the pause have reached the page through a
    // loaded machine's queues: wait (60 s at most) until a half second brings
    // no newer state, then require the sequence number to stay put
    for (let t0 = Date.now(), prev = -1; Date.now() - t0 < 60000;) {
      const s = await seqNow();
      if (s === prev) break;
      prev = s;
      await sleep(500);
    }
    await sleep(200);
    const p0 = await seqNow();
    await sleep(700);
    result.seq_paused = [p0, await seqNow()];
    result.paused_shown = await pausedNow();
    result.mode_text = await page.textContent('#mode');
    // picking between frames (paused: no state comes in): each body given a
    // pose 0.3 m higher that no frame has drawn yet, as when states arrive
    // faster than software WebGL draws; its origin as drawn must still pick it
    const r1 = await page.evaluate(() => khz.rendered);
    await page.evaluate(() => khz.redraw());
    await page.waitForFunction((r) => khz.rendered > r, r1, { timeout: 60000 });
    result.pick_between_frames = await page.evaluate(() => khz.bodies.map((b, i) => {
      const before = khz.project(i);
      if (i === 0 || !before.inside) return null;
      b.position.z += 0.3;
      const p = khz.project(i);
      const hit = khz.pickAt(p.x, p.y);
      b.position.z -= 0.3;
      return { body: i, hit, moved_px: Math.hypot(p.x - before.x, p.y - before.y) };
    }).filter((x) => x));
    await page.evaluate(() => khz.redraw());
    await page.click('#resume');
    await page.waitForFunction(() => !khz.state.paused, null, { timeout: 60000 });
    result.replies = await page.evaluate(() => khz.replies.map((r) => [r.op, r.ok]));

    mark('paused');
    // drag a body: a spring from the grabbed point to the pointer pushes it
    const name = arg || 'box1';
    const b = result.model.bodies.indexOf(name);
    result.drag_body = b;
    const poseOf = () => page.evaluate((i) => khz.state.pose.slice(7 * i, 7 * i + 3), b);
    const p = await page.evaluate((i) => khz.project(i), b);
    result.drag_pick = await page.evaluate(([x, y]) => khz.pickAt(x, y), [p.x, p.y]);
    result.drag_before = await poseOf();
    await page.mouse.move(p.x, p.y);
    await page.mouse.down();
    for (let k = 1; k <= 10; k++) { await page.mouse.move(p.x + 16 * k, p.y); await sleep(50); }
    await sleep(1500);
    await page.mouse.up();
    await sleep(300);
    result.drag_after = await poseOf();
    result.pushes = await page.evaluate(() => khz.replies.filter((r) => r.op === 'push').length);
    result.push_refused = await page.evaluate(() => khz.replies.filter((r) => r.op === 'push' && !r.ok).map((r) => r.text).slice(0, 3));
    mark('dragged');

  }
  mark('done');
  result.errors = errors;
} catch (e) {
  process.stderr.write(`page errors: ${JSON.stringify(errors)}\n`);
  throw e;
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(result));
