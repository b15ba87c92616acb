// browser.mjs — drives Debian's chromium (headless, software WebGL) with the
// npm registry's playwright-core against a running `khz view`, and prints
// what it saw as JSON for tests/viewer/test_view.py to judge.
//
//   node browser.mjs VIEWER_DIR URL check OUT.png [BODY]   the test's walk-through
//   node browser.mjs VIEWER_DIR URL shot OUT.png [SECONDS] [contacts]   a screenshot
// (the page is 1024 x 640 unless $KHZ_SHOT_SIZE says WxH)
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
const t0 = Date.now();
const mark = (k) => { result.times[k] = (Date.now() - t0) / 1000; };
try {
  const [w, h] = (process.env.KHZ_SHOT_SIZE || '1024x640').split('x').map(Number);
  const page = await browser.newPage({ viewport: { width: w, height: h } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  mark('launched');
  await page.goto(url);
  await page.waitForFunction(() => window.khz && window.khz.frames > 5, null, { timeout: 30000 });
  mark('states');
  result.model = await page.evaluate(() => ({ scene: khz.model.scene, bodies: khz.model.bodies, geoms: khz.model.geoms.length }));
  const seqNow = () => page.evaluate(() => khz.seq);
  const pausedNow = () => page.evaluate(() => khz.state.paused);

  if (mode === 'shot') {
    if (arg2 === 'contacts') await page.click('#show-contacts');
    await sleep(1000 * parseFloat(arg || '2'));
    await page.screenshot({ path: out });
  } else {
    // what is drawn: a screenshot of the page and, per body, the pixel under its origin
    await sleep(500);
    const canvas = await page.$('#scene canvas');
    await canvas.screenshot({ path: out });
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
    // pause: the sequence number stops and the state says PAUSED
    const s0 = await seqNow();
    await sleep(300);
    result.seq_running = [s0, await seqNow()];
    await page.click('#pause');
    await page.waitForFunction(() => khz.state.paused, null, { timeout: 10000 });
    await sleep(200);
    const p0 = await seqNow();
    await sleep(700);
    result.seq_paused = [p0, await seqNow()];
    result.paused_shown = await pausedNow();
    result.mode_text = await page.textContent('#mode');
    await page.click('#resume');
    await page.waitForFunction(() => !khz.state.paused, null, { timeout: 10000 });
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
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(result));
