// browser.mjs — drives Debian's chromium (headless, software WebGL) with the
// npm registry's playwright-core against a running `khz view`, and prints
// what it saw as JSON for tests/viewer/test_view.py to judge.
//
//   node browser.mjs VIEWER_DIR URL check OUT.png BODY [PREFIX EXPECTED.png SEQ [BODY...]]
//                                                          the test's walk-through
//   node browser.mjs VIEWER_DIR URL shot OUT.png [SECONDS] [contacts]   a screenshot
//   node browser.mjs VIEWER_DIR URL compare PREFIX EXPECTED.png SEQ [BODY...]
//   node browser.mjs VIEWER_DIR URL hil    the HIL sensor panel and a sensor's plot
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
  result.model = await page.evaluate(() => ({ scene: khz.model.scene, bodies: khz.model.bodies, geoms: khz.model.geoms.length }));
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
    const s0 = await seqNow();
    await sleep(300);
    result.seq_running = [s0, await seqNow()];
    await page.click('#pause');
    await page.waitForFunction(() => khz.state.paused, null, { timeout: 60000 });
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
