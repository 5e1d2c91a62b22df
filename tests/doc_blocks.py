"""The code blocks of the hand-written documentation pages, as the tests execute them.

A page's fenced blocks are read in order. ``python`` blocks of one page run together, in one
process, as one script (a later block uses the names an earlier one defined, as a reader
following the page does); each line of a ``bash`` block is a command run in that process
(``fairalloc ...`` through ``fairalloc.cli.main``, ``python script.py`` as ``__main__``).
``text`` blocks are output shown on the page, not run.

A block that cannot run as written in the tests (it needs the ``../shared`` data, or takes
more than a few seconds) carries, on the line before its fence, a directive::

    <!-- docs-test: tiny OLD => NEW; OLD2 => NEW2 -->

(the tests run the block with each ``OLD`` replaced by ``NEW``: a smaller input), and the page
says so in a visible note above it (an admonition ``!!! note "Tested on a smaller input"``;
`Block.noted`). A block that is not a command (an elided ``...``) carries
``<!-- docs-test: not-a-command REASON -->``, and its reader sees the ``...``.
``<!-- docs-test: status 0,1 -->`` lists the exit statuses a block's commands may end with
(default 0; ``fairalloc check`` exits 1 when a property fails), and
``<!-- docs-test: page-env NAME=VALUE -->`` sets an environment variable for the whole page.
``pip install ".[extra]"`` lines are not run (no index offline): the tests check that each
extra they name is declared in ``pyproject.toml``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the pages whose blocks the tests execute: the tutorial, the how-to guides and the
#: explanation pages (``docs/architecture.md``, ``docs/index.md``)
PAGES = sorted([ROOT / "docs" / "tutorial.md", ROOT / "docs" / "index.md",
                ROOT / "docs" / "architecture.md", *(ROOT / "docs" / "how-to").glob("*.md")])

_FENCE = re.compile(r"^```(\w*)\s*$")
_DIRECTIVE = re.compile(r"^<!--\s*docs-test:\s*(\S+)\s*(.*?)\s*-->\s*$")
_NOTE = re.compile(r'^!!! note "Tested on a smaller input"')


@dataclass
class Block:
    page: Path
    line: int                 # 1-based line of the opening fence
    lang: str
    code: str
    directive: str = ""       # "", "tiny" or "not-a-command"
    argument: str = ""
    substitutions: list[tuple[str, str]] = field(default_factory=list)
    noted: bool = False       # a visible "Tested on a smaller input" note above it
    statuses: tuple[int, ...] = (0,)   # the exit statuses a shell command may end with

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def as_tested(self) -> str:
        """The code the tests run: the page's, with the ``tiny`` substitutions applied."""
        code = self.code
        for old, new in self.substitutions:
            assert old in code, f"{self.where}: tiny substitution {old!r} not in the block"
            code = code.replace(old, new)
        return code


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        block = Block(page, start + 1, lang, "\n".join(lines[start + 1:j]) + "\n")
        k = start - 1
        while k >= 0 and (not lines[k].strip() or _DIRECTIVE.match(lines[k])):
            d = _DIRECTIVE.match(lines[k])
            if d and d.group(1) == "status":
                block.statuses = tuple(int(s) for s in d.group(2).split(","))
            elif d and d.group(1) == "tiny":
                block.directive = "tiny"
                for part in d.group(2).split(";"):
                    old, sep, new = part.partition("=>")
                    assert sep, f"{block.where}: tiny substitution without '=>': {part!r}"
                    block.substitutions.append((old.strip(), new.strip()))
            elif d:
                block.directive, block.argument = d.group(1), d.group(2)
            k -= 1
        block.noted = any(_NOTE.match(x) for x in lines[:k + 1])
        out.append(block)
        i = j + 1
    return out


def shell_commands(page: Path) -> list[tuple[Block, str]]:
    """The page's ``bash`` blocks, continuation lines joined: (block, one command) each."""
    out = []
    for b in blocks(page):
        if b.lang != "bash" or b.directive == "not-a-command":
            continue
        for command in b.as_tested().replace("\\\n", " ").splitlines():
            command = command.split("  #")[0].strip()
            if command and not command.startswith("#"):
                out.append((b, command))
    return out


#: a four-job trace in the Shockwave artifact's format (the lines of
#: ``examples/trace_replay.py``): what the tests give a block that reads
#: ``trace_120jobs.tsv`` from the ``../shared`` data folder
TINY_TRACE = "".join(
    "\t".join([job, "python3 train.py", "workdir", "--steps", "1", steps, gang, mode, "1",
               "-1.000000", duration, arrival]) + "\n"
    for job, steps, gang, mode, duration, arrival in [
        ("ResNet-18 (batch size 32)", "60000", "1", "accordion", "1400", "0"),
        ("LM (batch size 10)", "120000", "1", "gns", "1300", "60"),
        ("Transformer (batch size 16)", "12000", "2", "static", "1500", "120"),
        ("Recommendation (batch size 2048)", "150000", "1", "accordion", "2500", "300")])


def prepare(folder: Path) -> None:
    """Lay out ``folder`` as a reader's working directory: the checkout's ``examples`` and
    ``benchmarks`` (linked), and ``tiny_trace.tsv`` (`TINY_TRACE`)."""
    for name in ("examples", "benchmarks"):
        (folder / name).symlink_to(ROOT / name, target_is_directory=True)
    (folder / "tiny_trace.tsv").write_text(TINY_TRACE, encoding="utf-8")
