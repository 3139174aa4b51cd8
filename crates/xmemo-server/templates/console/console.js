// The Memory Console's only script (served from /assets/console.js under script-src 'self').
// It improves pages that work without it: copy buttons on the connect page's recipes, live
// Markdown preview (rendered and sanitised by the server), one more component row, and the
// size limits checked before a form is sent.
"use strict";
(function () {
  // Each button copies the text of the block it names. The buttons stay hidden without this
  // script (a button that does nothing is worse than none); `data-copied` keeps what was
  // copied, for a person's assistive tools and for the console's browser tests.
  function selectAndCopy(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    try { return document.execCommand("copy"); } catch (e) { return false; }
  }
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var block = document.getElementById(button.dataset.copy);
    if (!block) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = block.textContent;
      function done(ok) {
        button.textContent = ok ? "Copied" : "Selected: press Ctrl+C";
        if (ok) button.dataset.copied = text;
        setTimeout(function () { button.textContent = "Copy"; }, 2000);
      }
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(
          function () { done(true); },
          function () { done(selectAndCopy(block)); }
        );
      } else {
        done(selectAndCopy(block));
      }
    });
  });
})();

(function () {
  var form = document.getElementById("editor");
  if (!form) return;
  var body = document.getElementById("body");
  var preview = document.getElementById("preview");
  var csrf = form.querySelector("input[name=csrf]").value;
  var bodyMax = Number(form.dataset.bodyMax);
  var componentMax = Number(form.dataset.componentMax);
  var counter = document.getElementById("body-count");
  var timer = null;
  function bytes(text) { return new TextEncoder().encode(text).length; }
  function count() {
    var n = bytes(body.value);
    counter.textContent = n + " of " + bodyMax + " bytes";
    counter.classList.toggle("error", n > bodyMax);
  }
  function refresh() {
    var data = new URLSearchParams();
    data.set("csrf", csrf);
    data.set("body", body.value);
    fetch("/console/preview", { method: "POST", body: data, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null) preview.innerHTML = html; })
      .catch(function () {});
  }
  body.addEventListener("input", function () {
    count();
    clearTimeout(timer);
    timer = setTimeout(refresh, 300);
  });
  count();

  var rows = document.getElementById("component-rows");
  var add = document.getElementById("add-component");
  add.hidden = false;
  add.addEventListener("click", function () {
    var last = rows.querySelector(".component.new:last-of-type") || rows.lastElementChild;
    var index = Number(last.dataset.index) + 1;
    var copy = last.cloneNode(true);
    copy.dataset.index = String(index);
    copy.querySelectorAll("[id],[name],[for]").forEach(function (el) {
      ["id", "name", "for"].forEach(function (attr) {
        var v = el.getAttribute(attr);
        if (v) el.setAttribute(attr, v.replace(/^c\d+_/, "c" + index + "_"));
      });
      if (el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && el.type !== "hidden")) el.value = "";
    });
    rows.appendChild(copy);
    var first = copy.querySelector("input");
    if (first) first.focus();
  });

  var error = document.getElementById("limit-error");
  form.addEventListener("submit", function (event) {
    var problems = [];
    if (bytes(body.value) > bodyMax) problems.push("The instructions are over " + bodyMax + " bytes.");
    form.querySelectorAll("[data-limit=component]").forEach(function (el) {
      var n = el.type === "file" ? (el.files[0] ? el.files[0].size : 0) : bytes(el.value);
      if (n > componentMax) problems.push((el.id || "A component") + " is over " + componentMax + " bytes.");
    });
    if (problems.length) {
      event.preventDefault();
      error.textContent = problems.join(" ");
      error.hidden = false;
      error.focus();
    }
  });
})();
