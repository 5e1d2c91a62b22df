// Typeset the mathematics that pymdownx.arithmatex (generic mode) leaves as \( \) and \[ \]
// in <span|div class="arithmatex">, and the $...$ / $$...$$ of the notebooks' Markdown cells
// (.jp-RenderedMarkdown), on every page load (including Material's instant loading). KaTeX
// itself is bundled with the site (docs/vendor/katex), so this works offline.
const FAIRALLOC_TEX = [
  { left: "\\(", right: "\\)", display: false },
  { left: "\\[", right: "\\]", display: true },
];
const FAIRALLOC_NOTEBOOK_TEX = [
  { left: "$$", right: "$$", display: true },
  { left: "$", right: "$", display: false },
  ...FAIRALLOC_TEX,
];
function fairallocTypeset(root) {
  if (typeof renderMathInElement === "undefined") return;
  for (const el of root.querySelectorAll(".arithmatex")) {
    renderMathInElement(el, { delimiters: FAIRALLOC_TEX, throwOnError: false });
  }
  for (const el of root.querySelectorAll(".jp-RenderedMarkdown")) {
    renderMathInElement(el, { delimiters: FAIRALLOC_NOTEBOOK_TEX, throwOnError: false });
  }
}
if (typeof document$ !== "undefined") {
  document$.subscribe(({ body }) => fairallocTypeset(body));
} else {
  window.addEventListener("load", () => fairallocTypeset(document.body));
}
