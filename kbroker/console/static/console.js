// kbroker console: the live throughput chart (records/s per topic), drawn on a <canvas>
// by this file alone (no chart library, nothing loaded from the internet).  It polls the
// canvas' data-src (/api/throughput) every 2 s; the JSON is {"t": [epoch s], "series":
// {topic: [records/s]}}.  The canvas gets data-points = the number of points drawn, so a
// test can tell that the chart has data.
(function () {
  "use strict";
  var COLORS = ["#0b63c7", "#e07b00", "#2e9d4f", "#c62828", "#7a3e9d", "#00838f", "#8d6e63", "#546e7a"];

  function draw(canvas, legend, data) {
    var ctx = canvas.getContext("2d");
    var w = canvas.width, h = canvas.height, left = 56, bottom = 22, top = 10, right = 10;
    ctx.clearRect(0, 0, w, h);
    var names = Object.keys(data.series).sort();
    var n = data.t.length, max = 1;
    names.forEach(function (k) { data.series[k].forEach(function (v) { if (v > max) max = v; }); });
    ctx.strokeStyle = "#e4e7ec"; ctx.fillStyle = "#667"; ctx.font = "11px sans-serif"; ctx.lineWidth = 1;
    for (var i = 0; i <= 4; i++) {
      var y = top + (h - top - bottom) * i / 4;
      ctx.beginPath(); ctx.moveTo(left, y); ctx.lineTo(w - right, y); ctx.stroke();
      ctx.fillText((max * (4 - i) / 4).toFixed(max >= 10 ? 0 : 1), 4, y + 4);
    }
    if (n > 0) {
      var t0 = new Date(data.t[0] * 1000), t1 = new Date(data.t[n - 1] * 1000);
      ctx.fillText(t0.toISOString().substr(11, 8), left, h - 6);
      ctx.fillText(t1.toISOString().substr(11, 8) + " UTC", w - right - 90, h - 6);
    }
    var points = 0;
    legend.innerHTML = "";
    names.forEach(function (k, idx) {
      var color = COLORS[idx % COLORS.length], s = data.series[k];
      ctx.strokeStyle = color; ctx.lineWidth = 2; ctx.beginPath();
      s.forEach(function (v, j) {
        var x = left + (w - left - right) * (n > 1 ? j / (n - 1) : 0);
        var y = top + (h - top - bottom) * (1 - v / max);
        if (j === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
        points++;
      });
      ctx.stroke();
      var item = document.createElement("span"), box = document.createElement("i");
      box.style.background = color; item.appendChild(box);
      item.appendChild(document.createTextNode(k + " " + (s.length ? s[s.length - 1] : 0) + "/s"));
      legend.appendChild(item);
    });
    canvas.setAttribute("data-points", String(points));
  }

  function poll(canvas) {
    var legend = document.getElementById(canvas.id + "-legend");
    function tick() {
      fetch(canvas.getAttribute("data-src"), {cache: "no-store"})
        .then(function (r) { return r.json(); })
        .then(function (d) { draw(canvas, legend, d); })
        .catch(function () { /* the next tick tries again */ });
    }
    tick();
    setInterval(tick, 2000);
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("canvas.chart"), poll);
  });
})();
