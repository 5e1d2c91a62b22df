"""Cross-references that read well in ``help()`` too.

Docstrings name other objects as plain inline code, ``fairalloc.results.Certificate`` in single
or double backticks, which ``help()`` and an editor show as they are. This Griffe extension (loaded
by mkdocstrings, see ``mkdocs.yml``) turns each such name into an *optional* autorefs link while
the site builds: a link where the object has an API page, the same inline code where it has
none (no strict-mode warning). Docstrings written in the older ``[`X`][fairalloc.X]`` form render
as before; ``python docs/_tools/plain_refs.py PATH...`` rewrites them to the plain form.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

#: inline code holding a dotted ``fairalloc`` name (not already the title of a Markdown link)
PLAIN_REF = re.compile(r"(?<![\[`\w])(``?)(fairalloc(?:\.[A-Za-z_]\w*)+)\1(?![`\]\w])")


def link(text: str) -> str:
    """``text`` with every plain ``fairalloc.name`` inline code made an optional cross-reference.

    Examples
    --------
    >>> link("`fairalloc.Jobs`")
    '<autoref identifier="fairalloc.Jobs" optional><code>fairalloc.Jobs</code></autoref>'
    >>> link("[`X`][fairalloc.X]")  # already a link
    '[`X`][fairalloc.X]'
    """
    return PLAIN_REF.sub(
        lambda m: (f'<autoref identifier="{m.group(2)}" optional>'
                   f"<code>{m.group(2)}</code></autoref>"), text)


class PlainRefs(griffe.Extension):
    """Griffe extension: rewrite each docstring with ``link`` before mkdocstrings renders it."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = link(obj.docstring.value)
