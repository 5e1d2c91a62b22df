// Typeset the mathematics that pymdownx.arithmatex (generic mode) leaves as \( \) and \[ \]
// in <span|div class="arithmatex">, on every page load (including Material's instant loading).
function fairallocTypeset(root) {
  if (typeof renderMathInElement === "undefined") return;
  for (const el of root.querySelectorAll(".arithmatex")) {
    renderMathInElement(el, {
      delimiters: [
        { left: "\\(", right: "\\)", display: false },
        { left: "\\[", right: "\\]", display: true },
      ],
      throwOnError: false,
    });
  }
}
if (typeof document$ !== "undefined") {
  document$.subscribe(({ body }) => fairallocTypeset(body));
} else {
  window.addEventListener("load", () => fairallocTypeset(document.body));
}
