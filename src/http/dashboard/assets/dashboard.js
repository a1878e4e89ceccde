// idpool dashboard. The admin token is kept in sessionStorage (this tab
// only, gone when it closes) and sent as an Authorization header on fetch:
// no cookie, so no cross-site request can use it, and never in a URL, so it
// reaches no log or Referer. Everything shown is built with textContent.
(function () {
  'use strict';
  var TOKEN_KEY = 'idpool.adminToken';
  var POLL_MS = 2000;
  var timer = null;

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  var SVG = 'http://www.w3.org/2000/svg';

  function duration(s) {
    if (s === null || s === undefined) return 'never';
    if (s <= 0) return 'now';
    if (s < 120) return Math.round(s) + ' s';
    if (s < 7200) return Math.round(s / 60) + ' min';
    if (s < 172800) return Math.round(s / 3600) + ' h';
    if (s < 3 * 365 * 86400) return Math.round(s / 86400) + ' days';
    return Math.round(s / (365.25 * 86400)) + ' years';
  }
  function rate(r) { return (r >= 100 ? Math.round(r) : Math.round(r * 10) / 10) + ' /s'; }

  function sparkline(points, field, label) {
    var svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('class', 'spark');
    svg.setAttribute('viewBox', '0 0 140 28');
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', label);
    svg.setAttribute('data-points', String(points.length));
    if (points.length < 2) return svg;
    var t0 = points[0].t, t1 = points[points.length - 1].t;
    var max = 0;
    points.forEach(function (p) { if (p[field] > max) max = p[field]; });
    var coords = points.map(function (p) {
      var x = t1 === t0 ? 0 : ((p.t - t0) / (t1 - t0)) * 138 + 1;
      var y = max === 0 ? 27 : 27 - (p[field] / max) * 25;
      return x.toFixed(1) + ',' + y.toFixed(1);
    });
    var line = document.createElementNS(SVG, 'polyline');
    line.setAttribute('points', coords.join(' '));
    svg.appendChild(line);
    var title = document.createElementNS(SVG, 'title');
    title.textContent = label + ': max ' + Math.round(max);
    svg.appendChild(title);
    return svg;
  }

  function renderEntities(entities) {
    var body = $('entities').querySelector('tbody');
    body.replaceChildren();
    $('no-entities').hidden = entities.length > 0;
    entities.forEach(function (e) {
      var tr = el('tr', { 'data-entity': e.key });
      tr.appendChild(el('td', { 'data-field': 'key' }, e.key));
      tr.appendChild(el('td', { 'data-field': 'mode' }, e.mode));
      var fill = el('td', { 'data-field': 'fill' });
      var bar = el('span', { class: 'bar' + (e.pool.size < e.pool.lowWatermark ? ' low' : ''), title: e.pool.fillPercent + '%' });
      var inner = el('span');
      inner.style.width = Math.min(100, e.pool.fillPercent) + '%';
      bar.appendChild(inner);
      fill.appendChild(bar);
      fill.appendChild(document.createTextNode(' ' + e.pool.fillPercent + '%'));
      tr.appendChild(fill);
      tr.appendChild(el('td', { class: 'num', 'data-field': 'poolSize' }, e.pool.size + ' / ' + e.pool.target));
      tr.appendChild(el('td', { class: 'num', 'data-field': 'takeRate', 'data-value': String(e.takePerSecond) }, rate(e.takePerSecond)));
      tr.appendChild(el('td', { class: 'num', 'data-field': 'poolDry' }, duration(e.forecast.poolDrySeconds)));
      tr.appendChild(el('td', { class: 'num', 'data-field': 'jsSafe' }, duration(e.forecast.jsSafeLimitSeconds)));
      tr.appendChild(el('td', { class: 'num', 'data-field': 'int63' }, duration(e.forecast.int63LimitSeconds)));
      var c1 = el('td', { 'data-field': 'sizeChart' });
      c1.appendChild(sparkline(e.history, 'size', 'pool size of ' + e.key));
      tr.appendChild(c1);
      var c2 = el('td', { 'data-field': 'rateChart' });
      c2.appendChild(sparkline(e.history, 'takePerSecond', 'take rate of ' + e.key));
      tr.appendChild(c2);
      body.appendChild(tr);
    });
  }

  function renderWorkers(workers) {
    var body = $('workers').querySelector('tbody');
    body.replaceChildren();
    $('no-workers').hidden = workers.length > 0;
    workers.forEach(function (w) {
      var tr = el('tr', { 'data-worker': String(w.workerId) });
      tr.appendChild(el('td', { class: 'num' }, w.workerId));
      tr.appendChild(el('td', null, w.code));
      tr.appendChild(el('td', null, w.heartbeatAt));
      tr.appendChild(el('td', null, w.lastTimestamp));
      tr.appendChild(el('td', null, w.live ? 'yes' : 'no'));
      body.appendChild(tr);
    });
  }

  function renderAlarms(alarms) {
    var list = $('alarms');
    list.replaceChildren();
    $('no-alarms').hidden = alarms.recent.length > 0;
    $('active-alarms').textContent = alarms.active ? alarms.active + ' active' : '';
    alarms.recent.slice(0, 30).forEach(function (a) {
      var li = el('li', { class: a.status === 'resolved' ? 'resolved' : a.severity, 'data-alarm': a.name });
      li.textContent = a.at.replace('T', ' ').replace(/\.\d+Z$/, 'Z') + ' ' + (a.status === 'resolved' ? 'resolved ' : '') + a.name + (a.entityKey ? ' [' + a.entityKey + ']' : '') + ': ' + a.message;
      list.appendChild(li);
    });
  }

  function renderSnowflake(sf) {
    $('snowflake').textContent = sf
      ? 'Runs out of timestamp bits on ' + sf.timeExhaustedAt + '; ' +
        (!sf.jsSafeLimitAt ? 'ids never pass 2^53.' : Date.parse(sf.jsSafeLimitAt) <= Date.now() ? 'ids have been above 2^53 (unsafe as JavaScript numbers) since ' + sf.jsSafeLimitAt + '.' : 'ids pass 2^53 on ' + sf.jsSafeLimitAt + '.')
      : 'Snowflake ids are not enabled on this instance.';
  }

  function showLogin(message) {
    clearTimeout(timer);
    $('main').hidden = true;
    $('signout').hidden = true;
    $('login').hidden = false;
    $('login-error').textContent = message || '';
    $('status').textContent = '';
  }

  function poll() {
    var token = sessionStorage.getItem(TOKEN_KEY);
    if (!token) return showLogin();
    fetch('/admin/ops', { headers: { Authorization: 'Bearer ' + token }, cache: 'no-store' })
      .then(function (res) {
        if (res.status === 401) {
          sessionStorage.removeItem(TOKEN_KEY);
          showLogin('That token was refused.');
          return null;
        }
        if (!res.ok) throw new Error('HTTP ' + res.status);
        return res.json();
      })
      .then(function (data) {
        if (!data) return;
        $('login').hidden = true;
        $('main').hidden = false;
        $('signout').hidden = false;
        renderEntities(data.entities);
        renderWorkers(data.workers);
        renderAlarms(data.alarms);
        renderSnowflake(data.snowflake);
        $('status').textContent = 'updated ' + data.at;
        $('status').setAttribute('data-updated', data.at);
        timer = setTimeout(poll, POLL_MS);
      })
      .catch(function (err) {
        $('status').textContent = 'cannot reach the service (' + err.message + '); retrying';
        timer = setTimeout(poll, POLL_MS);
      });
  }

  $('login').addEventListener('submit', function (ev) {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
    $('token').value = '';
    poll();
  });
  $('signout').addEventListener('click', function () {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin();
  });
  poll();
})();
