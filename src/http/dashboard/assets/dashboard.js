// idpool dashboard. The admin token is kept in sessionStorage (this tab
// only, gone when it closes) and sent as an Authorization header on fetch:
// no cookie, so no cross-site request can use it, and never in a URL, so it
// reaches no log or Referer. Everything shown is built with textContent.
(function () {
  'use strict';
  var TOKEN_KEY = 'idpool.adminToken';
  var POLL_MS = 2000;
  var timer = null;
  // Only the latest request may draw: a search typed while an older poll is under way wins.
  var seq = 0;

  function $(id) {
    return document.getElementById(id);
  }
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
    if (s < 3 * 365 * 86400) return num(Math.round(s / 86400)) + ' days';
    return num(Math.round(s / (365.25 * 86400))) + ' years';
  }
  // Thousands separators, whatever the browser's locale: the numbers are ids and rates, not prose.
  var NUMBER = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });
  function num(n) {
    return NUMBER.format(n);
  }
  // How long ago, in the service's time (`data.at`), so the browser's clock does not matter.
  function ago(s) {
    if (s < 0.1) return 'just now';
    return (s < 10 ? s.toFixed(1) + ' s' : s < 120 ? Math.round(s) + ' s' : duration(s)) + ' ago';
  }
  function rate(r) {
    return num(r >= 100 ? Math.round(r) : r) + ' /s';
  }

  // A chart of the last minutes with its scale: the plot spans 0 to the
  // largest value shown, both written on the y axis; the x axis is time.
  var PLOT_LEFT = 46,
    WIDTH = 160,
    HEIGHT = 32;
  function sparkline(points, field, label) {
    var svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('class', 'spark');
    svg.setAttribute('viewBox', '0 0 ' + WIDTH + ' ' + HEIGHT);
    svg.setAttribute('role', 'img');
    svg.setAttribute('data-points', String(points.length));
    if (points.length < 2) {
      svg.setAttribute('aria-label', label + ': no data yet');
      return svg;
    }
    var t0 = points[0].t,
      t1 = points[points.length - 1].t;
    var max = 0;
    points.forEach(function (p) {
      if (p[field] > max) max = p[field];
    });
    svg.setAttribute('data-min', '0');
    svg.setAttribute('data-max', String(max));
    svg.setAttribute('aria-label', label + ', 0 to ' + num(max) + ' over ' + Math.round((t1 - t0) / 1000) + ' s');
    function text(y, value, cls) {
      var t = document.createElementNS(SVG, 'text');
      t.setAttribute('x', String(PLOT_LEFT - 3));
      t.setAttribute('y', String(y));
      t.setAttribute('text-anchor', 'end');
      t.setAttribute('class', cls);
      t.textContent = value;
      svg.appendChild(t);
    }
    text(8, num(max), 'max');
    text(HEIGHT - 1, '0', 'min');
    var axis = document.createElementNS(SVG, 'line');
    axis.setAttribute('class', 'axis');
    axis.setAttribute('x1', String(PLOT_LEFT));
    axis.setAttribute('x2', String(PLOT_LEFT));
    axis.setAttribute('y1', '1');
    axis.setAttribute('y2', String(HEIGHT - 1));
    svg.appendChild(axis);
    var span = WIDTH - PLOT_LEFT - 2;
    var coords = points.map(function (p) {
      var x = PLOT_LEFT + 1 + (t1 === t0 ? 0 : ((p.t - t0) / (t1 - t0)) * span);
      var y = max === 0 ? HEIGHT - 2 : HEIGHT - 2 - (p[field] / max) * (HEIGHT - 5);
      return x.toFixed(1) + ',' + y.toFixed(1);
    });
    var line = document.createElementNS(SVG, 'polyline');
    line.setAttribute('points', coords.join(' '));
    svg.appendChild(line);
    var title = document.createElementNS(SVG, 'title');
    title.textContent = label + ': 0 to ' + num(max);
    svg.appendChild(title);
    return svg;
  }

  // When the row's values were read: "0.4 s ago", or for a stale row "stale — last sampled 40 s ago".
  function sampledCell(e, age) {
    var cls = e.stale ? 'stale-note' : 'muted';
    if (e.sampledAt === null)
      return el('td', { 'data-field': 'sampled', class: cls }, e.stale ? 'stale — never sampled' : 'not yet sampled');
    return el(
      'td',
      {
        'data-field': 'sampled',
        'data-age': String(Math.round(age)),
        class: cls,
        title: new Date(e.sampledAt).toISOString(),
      },
      (e.stale ? 'stale — last sampled ' : '') + ago(age),
    );
  }

  function renderEntities(data) {
    var entities = data.entities;
    var now = Date.parse(data.at);
    var body = $('entities').querySelector('tbody');
    body.replaceChildren();
    $('no-entities').hidden = entities.length > 0;
    var searched = $('search').value.trim();
    $('entity-count').textContent =
      (searched
        ? num(data.matching) + ' of ' + num(data.entityCount) + ' entities match'
        : num(data.entityCount) + ' entities') +
      (entities.length < data.matching ? '; the ' + num(entities.length) + ' busiest shown' : '');
    entities.forEach(function (e) {
      var tr = el('tr', { 'data-entity': e.key });
      tr.appendChild(el('td', { 'data-field': 'key', title: e.key }, e.key));
      // A business-number entity's kind is its mode's word here (its numbers' order, monotonic or trend, on hover);
      // a gapless series' is "gapless".
      tr.appendChild(
        el(
          'td',
          {
            'data-field': 'mode',
            title: e.gapless
              ? 'gapless business numbers: each issued in its ledger, at the take'
              : e.period
                ? 'business numbers, ' + e.mode
                : e.mode,
          },
          e.gapless ? 'gapless' : e.period ? 'number' : e.mode,
        ),
      );
      if (e.mode === 'snowflake') {
        tr.appendChild(
          el(
            'td',
            { class: 'muted', 'data-field': 'sampled', title: 'counted as ids are served: nothing to sample' },
            'live',
          ),
        );
        // No pool and no number line: ids are made on the spot, by each instance.
        tr.appendChild(el('td', { 'data-field': 'fill', class: 'muted' }, 'no pool'));
        tr.appendChild(el('td', { class: 'num', 'data-field': 'poolSize' }, '-'));
        tr.appendChild(
          el(
            'td',
            {
              class: 'num',
              'data-field': 'takeRate',
              'data-value': String(e.takePerSecond),
              title: rateScope(data.rates),
            },
            rate(e.takePerSecond),
          ),
        );
        for (var i = 0; i < 5; i++) tr.appendChild(el('td', { class: 'muted' }, '-'));
        body.appendChild(tr);
        return;
      }
      // A stale row shows the last values read, greyed: never zeros or "now" passed off as current.
      var age = e.sampledAt === null ? null : Math.max(0, (now - e.sampledAt) / 1000);
      if (e.stale) {
        tr.className = 'stale';
        tr.title =
          'not sampled for over two sampling rounds (' +
          data.sampling.roundSeconds +
          ' s each): these are the last values read';
      }
      tr.appendChild(sampledCell(e, age));
      if (e.sampledAt === null) {
        // Not sampled yet: nothing was read, so nothing is shown as a value.
        tr.appendChild(el('td', { 'data-field': 'fill', class: 'muted' }, '-'));
        tr.appendChild(el('td', { class: 'num muted', 'data-field': 'poolSize' }, '-'));
        tr.appendChild(el('td', { class: 'num muted', 'data-field': 'takeRate', 'data-value': '0' }, '-'));
        for (var j = 0; j < 5; j++) tr.appendChild(el('td', { class: 'muted' }, '-'));
        body.appendChild(tr);
        return;
      }
      if (e.period) {
        numberCells(tr, e);
        body.appendChild(tr);
        return;
      }
      var fill = el('td', { 'data-field': 'fill' });
      var bar = el('span', {
        class: 'bar' + (e.pool.size < e.pool.lowWatermark ? ' low' : ''),
        title: e.pool.fillPercent + '%',
      });
      var inner = el('span');
      inner.style.width = Math.min(100, e.pool.fillPercent) + '%';
      bar.appendChild(inner);
      fill.appendChild(bar);
      fill.appendChild(document.createTextNode(' ' + e.pool.fillPercent + '%'));
      tr.appendChild(fill);
      tr.appendChild(
        el('td', { class: 'num', 'data-field': 'poolSize' }, num(e.pool.size) + ' / ' + num(e.pool.target)),
      );
      tr.appendChild(
        el(
          'td',
          { class: 'num', 'data-field': 'takeRate', 'data-value': String(e.takePerSecond) },
          rate(e.takePerSecond),
        ),
      );
      tr.appendChild(el('td', { class: 'num', 'data-field': 'poolDry' }, duration(e.forecast.poolDrySeconds)));
      tr.appendChild(el('td', { class: 'num', 'data-field': 'jsSafe' }, duration(e.forecast.jsSafeLimitSeconds)));
      tr.appendChild(el('td', { class: 'num', 'data-field': 'int63' }, duration(e.forecast.int63LimitSeconds)));
      chartCells(tr, e);
      body.appendChild(tr);
    });
  }

  // The pool size's and the take rate's charts of the last minutes (a business-number entity's pool: its ready numbers).
  function chartCells(tr, e) {
    var c1 = el('td', { 'data-field': 'sizeChart' });
    c1.appendChild(sparkline(e.history, 'size', 'pool size of ' + e.key));
    tr.appendChild(c1);
    var c2 = el('td', { 'data-field': 'rateChart' });
    c2.appendChild(sparkline(e.history, 'takePerSecond', 'take rate of ' + e.key));
    tr.appendChild(c2);
  }

  // A business-number entity's cells: in the pool's columns, now's period used against its capacity (10^N - 1)
  // and when its numbers run out at the current rate, in the entity's zone; offsets and 2^53 / 2^63 do not apply.
  function numberCells(tr, e) {
    var p = e.period;
    var where = 'period ' + p.id + ' (' + p.timeZone + ': from ' + p.startLocal + ')';
    var fill = el('td', {
      'data-field': 'period',
      title: where + (e.gapless ? ', issued at the take' : ', ' + num(p.ready) + ' numbers ready'),
    });
    var bar = el('span', { class: 'bar' + (p.runsOutBeforeEnd ? ' low' : '') });
    var inner = el('span');
    inner.style.width = Math.min(100, p.usedPercent) + '%';
    bar.appendChild(inner);
    fill.appendChild(bar);
    fill.appendChild(document.createTextNode(' ' + p.id));
    tr.appendChild(fill);
    tr.appendChild(
      el(
        'td',
        { class: 'num', 'data-field': 'periodUsed', title: p.usedPercent + '% of ' + where + ' used' },
        // "used": the column's header names a pool's size against its target, which a number entity has not;
        // "issued" for a gapless series, whose ledger's counter it is.
        num(Number(p.used)) + ' / ' + num(Number(p.capacity)) + (e.gapless ? ' issued' : ' used'),
      ),
    );
    tr.appendChild(
      el(
        'td',
        { class: 'num', 'data-field': 'takeRate', 'data-value': String(e.takePerSecond) },
        rate(e.takePerSecond),
      ),
    );
    var full = p.used === p.capacity;
    var runsOut = full
      ? 'full until ' + (p.endLocal || 'never')
      : p.runsOutLocal === null
        ? 'lasts the period'
        : (p.runsOutBeforeEnd ? 'runs out ' : 'lasts; would run out ') + p.runsOutLocal + ' ' + p.timeZone;
    tr.appendChild(
      el(
        'td',
        {
          'data-field': 'periodRunsOut',
          class: p.runsOutBeforeEnd ? 'error' : 'muted',
          title: p.digits + ' digits; the time is ' + p.timeZone + "'s, at the rate of the last 15 minutes",
        },
        runsOut,
      ),
    );
    // 2^53 and 2^63 do not apply: a period's sequence is not the number line.
    for (var k = 0; k < 2; k++) tr.appendChild(el('td', { class: 'muted' }, '-'));
    chartCells(tr, e);
  }

  // Whose take rates the table shows: the fleet's (summed over its instances) or, when the fleet could not be read, this instance's.
  function rateScope(rates) {
    return rates.scope === 'fleet'
      ? 'fleet: summed over ' + rates.instances + (rates.instances === 1 ? ' instance' : ' instances')
      : 'this instance only' + (rates.note ? ' (' + rates.note + ')' : '');
  }
  function renderRates(rates) {
    var head = $('take-rate-head');
    head.textContent =
      rates.scope === 'fleet' ? 'Take rate, ids/s (all instances)' : 'Take rate, ids/s (this instance)';
    head.setAttribute('data-scope', rates.scope);
    head.title = rateScope(rates) + "; per-instance figures are in each instance's /metrics";
  }

  function short(iso) {
    return iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '-';
  }

  // The fleet's instances: gone ones greyed with their last heartbeat, disagreements named.
  function renderInstances(fleet) {
    var body = $('instances').querySelector('tbody');
    body.replaceChildren();
    $('fleet-summary').textContent =
      fleet.alive +
      ' alive' +
      (fleet.gone ? ', ' + fleet.gone + ' gone' : '') +
      (fleet.source === 'local' ? ' (this instance only)' : '');
    $('fleet').setAttribute('data-source', fleet.source);
    $('fleet-note').hidden = !fleet.note;
    $('fleet-note').textContent = fleet.note || '';
    var flags = [];
    if (fleet.disagreement.epoch)
      flags.push('instances see different Redis epochs (one may still be on an old master)');
    if (fleet.disagreement.version) flags.push('instances run different idpool versions');
    $('fleet-disagree').hidden = flags.length === 0;
    $('fleet-disagree').textContent = flags.length ? 'Disagreement: ' + flags.join('; ') + '.' : '';
    var now = Date.parse(fleet.at);
    fleet.instances.forEach(function (i) {
      var tr = el('tr', {
        'data-instance': i.id,
        'data-state': i.state,
        class: i.state + (i.disagrees.length ? ' disagrees' : ''),
      });
      tr.appendChild(el('td', { 'data-field': 'id' }, i.id + (i.self ? ' (this one)' : '')));
      tr.appendChild(el('td', { 'data-field': 'address' }, i.address));
      tr.appendChild(
        el(
          'td',
          { 'data-field': 'state', title: 'gone: no heartbeat within its TTL (' + i.ttlMs / 1000 + ' s)' },
          i.state,
        ),
      );
      tr.appendChild(
        el(
          'td',
          { 'data-field': 'heartbeat', title: i.heartbeatAt },
          ago(Math.max(0, (now - Date.parse(i.heartbeatAt)) / 1000)),
        ),
      );
      var vFlag = i.disagrees.indexOf('version') >= 0;
      var eFlag = i.disagrees.indexOf('epoch') >= 0;
      tr.appendChild(
        el('td', { 'data-field': 'version', class: vFlag ? 'flag' : '' }, i.version + (vFlag ? ' ≠' : '')),
      );
      tr.appendChild(el('td', { 'data-field': 'node' }, i.node));
      tr.appendChild(el('td', { class: 'num', 'data-field': 'workerId' }, i.workerId === null ? '-' : i.workerId));
      tr.appendChild(
        el(
          'td',
          { class: 'num', 'data-field': 'clockSkew', title: "this clock minus Redis's and the database's" },
          skewText(i.clockSkewMs),
        ),
      );
      tr.appendChild(
        el(
          'td',
          { 'data-field': 'epoch', class: eFlag ? 'flag' : '', title: i.epoch || 'not read' },
          i.epoch === null ? 'not read' : i.epoch.slice(0, 12) + '…' + (eFlag ? ' ≠' : ''),
        ),
      );
      tr.appendChild(el('td', { 'data-field': 'dialect' }, i.dialect));
      tr.appendChild(el('td', { 'data-field': 'startedAt' }, short(i.startedAt)));
      tr.appendChild(el('td', { 'data-field': 'lastSample' }, short(i.lastSampleAt)));
      tr.appendChild(el('td', { class: 'num', 'data-field': 'activeAlarms' }, i.activeAlarms));
      body.appendChild(tr);
    });
  }

  /** `redis +3 ms, database -1 ms` from a heartbeat's clockSkewMs (absent from older releases). */
  function skewText(skews) {
    if (!skews) return '-';
    var parts = Object.keys(skews).map(function (k) {
      var ms = skews[k];
      return k + ' ' + (ms === null ? 'not read' : (ms > 0 ? '+' : '') + ms + ' ms');
    });
    // One line each (the cell is `white-space: pre`): the table stays within 1,280 px.
    return parts.length ? parts.join('\n') : '-';
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

  // The fleet's alarms, each naming its instance; this instance's own ring when Redis did not answer, saying so.
  function renderAlarms(alarms) {
    var list = $('alarms');
    list.replaceChildren();
    $('no-alarms').hidden = alarms.recent.length > 0;
    $('fleet-alarms').setAttribute('data-scope', alarms.scope);
    $('alarms-title').textContent =
      alarms.scope === 'fleet' ? 'Recent alarms of the fleet' : 'Recent alarms of this instance';
    var note = $('alarms-note');
    note.className = alarms.note ? 'fallback' : 'muted';
    note.textContent = alarms.note
      ? alarms.note + ' (answering: ' + alarms.instance + ').'
      : alarms.scope === 'fleet'
        ? "Every instance's alarms, newest first; answering: " + alarms.instance + '.'
        : 'Instance ' + alarms.instance + ' (embedded mode: the only one).';
    $('active-alarms').textContent = alarms.active ? alarms.active + ' active' : '';
    alarms.recent.slice(0, 30).forEach(function (a) {
      var li = el('li', {
        class: a.status === 'resolved' ? 'resolved' : a.severity,
        'data-alarm': a.name,
        'data-instance': a.instance,
      });
      li.appendChild(el('span', { class: 'alarm-instance' }, a.instance));
      li.appendChild(
        document.createTextNode(
          ' ' +
            short(a.at) +
            ' ' +
            (a.status === 'resolved' ? 'resolved ' : '') +
            a.name +
            (a.entityKey ? ' [' + a.entityKey + ']' : '') +
            ': ' +
            a.message,
        ),
      );
      list.appendChild(li);
    });
  }

  // The header says whether the rows are current: the oldest sample's age and the stale entities.
  function renderSampling(sampling) {
    var out = $('sampling');
    out.className = sampling.ok ? 'ok' : 'behind';
    out.setAttribute('data-oldest', String(sampling.oldestSampleAgeSeconds));
    out.textContent = sampling.ok
      ? 'sampling ok: oldest sample ' + ago(sampling.oldestSampleAgeSeconds)
      : 'sampling behind: ' +
        num(sampling.staleEntities) +
        ' stale ' +
        (sampling.staleEntities === 1 ? 'entity' : 'entities') +
        ', oldest sample ' +
        ago(sampling.oldestSampleAgeSeconds);
    out.title =
      'every pool is read once a round (' + sampling.roundSeconds + ' s); a row not read for two rounds is stale';
  }

  function renderSnowflake(sf) {
    $('snowflake').textContent = sf
      ? (sf.region === undefined ? '' : 'Region ' + sf.region + '. ') +
        'Runs out of timestamp bits on ' +
        sf.timeExhaustedAt +
        '; ' +
        (!sf.jsSafeLimitAt
          ? 'ids never pass 2^53.'
          : Date.parse(sf.jsSafeLimitAt) <= Date.now()
            ? 'ids have been above 2^53 (unsafe as JavaScript numbers) since ' + sf.jsSafeLimitAt + '.'
            : 'ids pass 2^53 on ' + sf.jsSafeLimitAt + '.')
      : 'Snowflake ids are not enabled on this instance.';
  }

  // A live cutover's incumbent databases (Leaf's, Tinyid's), as /readyz checks them: hidden when there is none.
  function renderIncumbents() {
    fetch('/readyz', { cache: 'no-store' })
      .then(function (res) {
        return res.json();
      })
      .then(function (ready) {
        var out = $('incumbents');
        // Sorted: the checks are listed in the order their probes answered.
        var names = Object.keys(ready.checks || {})
          .filter(function (k) {
            return /^(leaf|tinyid)_database$/.test(k);
          })
          .sort();
        var down = names.filter(function (k) {
          return ready.checks[k] !== 'ok';
        });
        out.hidden = names.length === 0;
        out.className = down.length ? 'down' : 'ok';
        out.setAttribute('data-down', down.join(','));
        out.textContent = names
          .map(function (k) {
            return (
              k.replace('_database', '') + ' database ' + (ready.checks[k] === 'ok' ? 'up' : 'DOWN: ' + ready.checks[k])
            );
          })
          .join(', ');
        out.title =
          'the incumbent databases live entities still reserve from; down, their takes answer 503 once their pools are dry';
      })
      .catch(function () {
        $('incumbents').hidden = true;
      });
  }

  function showLogin(message) {
    clearTimeout(timer);
    $('main').hidden = true;
    $('signout').hidden = true;
    $('login').hidden = false;
    $('login-error').textContent = message || '';
    $('status').textContent = '';
    $('sampling').textContent = '';
  }

  function poll() {
    var token = sessionStorage.getItem(TOKEN_KEY);
    if (!token) return showLogin();
    var q = $('search').value.trim();
    var mine = ++seq;
    fetch('/admin/ops' + (q ? '?q=' + encodeURIComponent(q) : ''), {
      headers: { Authorization: 'Bearer ' + token },
      cache: 'no-store',
    })
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
        if (!data || mine !== seq) return;
        $('login').hidden = true;
        $('main').hidden = false;
        $('signout').hidden = false;
        renderEntities(data);
        renderWorkers(data.workers);
        renderAlarms(data.alarms);
        renderRates(data.rates);
        renderInstances(data.instances);
        renderSnowflake(data.snowflake);
        renderSampling(data.sampling);
        renderIncumbents();
        $('status').textContent = 'updated ' + data.at;
        $('status').setAttribute('data-updated', data.at);
        timer = setTimeout(poll, POLL_MS);
      })
      .catch(function (err) {
        if (mine !== seq) return;
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
  // Searching asks the service (it holds every entity; the page holds only what it shows).
  var searchTimer = null;
  $('search').addEventListener('input', function () {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(function () {
      if (!$('search').checkValidity()) return;
      clearTimeout(timer);
      poll();
    }, 250);
  });
  $('search-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
  });
  $('signout').addEventListener('click', function () {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin();
  });
  poll();
})();
